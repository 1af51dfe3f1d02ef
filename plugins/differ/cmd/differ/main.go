// Command differ is the differ sample NRI plugin as a standalone binary;
// see package github.com/nrikit/nrikit/plugins/differ.
package main

import (
	"github.com/nrikit/nrikit/plugins/differ"
	"github.com/nrikit/nrikit/plugins/internal/pluginmain"
)

func main() {
	pluginmain.Command(differ.Main)
}
