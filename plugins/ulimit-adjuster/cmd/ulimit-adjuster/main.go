// Command ulimit-adjuster is the ulimit-adjuster sample NRI plugin as a
// standalone binary; see package
// github.com/nrikit/nrikit/plugins/ulimit-adjuster.
package main

import (
	ulimitadjuster "github.com/nrikit/nrikit/plugins/ulimit-adjuster"
	"github.com/nrikit/nrikit/simulator/pluginmain"
)

func main() { pluginmain.Command(ulimitadjuster.Main) }
