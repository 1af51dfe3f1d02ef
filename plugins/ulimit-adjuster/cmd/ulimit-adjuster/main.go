// Command ulimit-adjuster is the ulimit-adjuster sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/ulimit-adjuster.
package main

import (
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	ulimitadjuster "github.com/nrikit/nrikit/plugins/ulimit-adjuster"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(ulimitadjuster.Main)
}
