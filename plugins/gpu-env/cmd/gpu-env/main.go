// Command gpu-env is the gpu-env sample NRI plugin as a standalone
// binary; see package github.com/nrikit/nrikit/plugins/gpu-env.
package main

import (
	gpuenv "github.com/nrikit/nrikit/plugins/gpu-env"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(gpuenv.Main)
}
