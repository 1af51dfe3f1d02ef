// Command device-injector is the device-injector sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/device-injector.
package main

import (
	deviceinjector "github.com/nrikit/nrikit/plugins/device-injector"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
)

func main() {
	pluginmain.Command(deviceinjector.Main)
}
