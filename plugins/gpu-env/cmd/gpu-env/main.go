// Command gpu-env is the gpu-env sample NRI plugin as a standalone
// binary; see package github.com/nrikit/nrikit/plugins/gpu-env.
package main

import (
	"github.com/nrikit/nrikit/internal/pluginmain"
	gpuenv "github.com/nrikit/nrikit/plugins/gpu-env"
)

func main() { pluginmain.Command(gpuenv.Main) }
