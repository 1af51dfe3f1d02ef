// Command device-injector is the device-injector sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/device-injector.
package main

import (
	deviceinjector "github.com/nrikit/nrikit/plugins/device-injector"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(deviceinjector.Main)
}
