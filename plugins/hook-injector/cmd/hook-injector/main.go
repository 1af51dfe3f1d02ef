// Command hook-injector is the hook-injector sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/hook-injector.
package main

import (
	"github.com/nrikit/nrikit/internal/pluginmain"
	hookinjector "github.com/nrikit/nrikit/plugins/hook-injector"
)

func main() { pluginmain.Command(hookinjector.Main) }
