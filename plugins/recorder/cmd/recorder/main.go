// Command recorder is the recorder NRI plugin (`nri record`) as a
// standalone binary; see package github.com/nrikit/nrikit/plugins/recorder.
package main

import (
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	"github.com/nrikit/nrikit/plugins/recorder"
	"github.com/nrikit/nrikit/stub"
)

func main() {
	stub.TuneProcess() // one P: see stub.TuneProcess for the trade-off
	pluginmain.Command(recorder.Main)
}
