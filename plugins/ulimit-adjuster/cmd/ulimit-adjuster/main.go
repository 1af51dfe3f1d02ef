// Command ulimit-adjuster is the ulimit-adjuster sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/ulimit-adjuster.
package main

import (
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
	ulimitadjuster "github.com/nrikit/nrikit/plugins/ulimit-adjuster"
)

func main() {
	pluginmain.Command(ulimitadjuster.Main)
}
