// Command logger is the logger sample NRI plugin as a standalone binary;
// see package github.com/nrikit/nrikit/plugins/logger.
package main

import (
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/plugins/logger"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(logger.Main)
}
