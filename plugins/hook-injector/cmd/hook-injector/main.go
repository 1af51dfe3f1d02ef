// Command hook-injector is the hook-injector sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/hook-injector.
package main

import (
	hookinjector "github.com/nrikit/nrikit/plugins/hook-injector"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(hookinjector.Main)
}
