// Command logger is the logger sample NRI plugin as a standalone binary;
// see package github.com/nrikit/nrikit/plugins/logger.
package main

import (
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/plugins/logger"
)

func main() {
	pluginmain.Command(logger.Main)
}
