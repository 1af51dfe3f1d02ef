// Command gpu-env is the gpu-env sample NRI plugin as a standalone
// binary; see package github.com/nrikit/nrikit/plugins/gpu-env.
package main

import (
	gpuenv "github.com/nrikit/nrikit/plugins/gpu-env"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
)

func main() {
	pluginmain.Command(gpuenv.Main)
}
