package upstreamstub

import (
	"fmt"
	"os"
	"testing"

	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// pluginBin is the upstream-stub test plugin, built once in TestMain.
var pluginBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "interop-upstreamstub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := testbin.Build(dir, testbin.Race, testbin.UpstreamPlugin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pluginBin = bins[testbin.UpstreamPlugin]
	return m.Run()
}
