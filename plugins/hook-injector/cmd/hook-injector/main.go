// Command hook-injector is the hook-injector sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/hook-injector.
package main

import (
	hookinjector "github.com/nrikit/nrikit/plugins/hook-injector"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
)

func main() {
	pluginmain.Command(hookinjector.Main)
}
