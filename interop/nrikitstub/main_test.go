package nrikitstub

import (
	"fmt"
	"os"
	"testing"
	"time"

	uadapt "github.com/containerd/nri/pkg/adaptation"

	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// pluginBin is the nrikit-stub test plugin and recorderBin the recorder
// plugin (nri record), built once in TestMain.
var pluginBin, recorderBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "interop-nrikitstub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := testbin.Build(dir, testbin.Race, testbin.NrikitPlugin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pluginBin = bins[testbin.NrikitPlugin]
	// In the main module: its dependencies (Prometheus) are not the
	// interop module's.
	if recorderBin, err = testbin.BuildModule(dir, "recorder", recorderDir, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Upstream's timeouts are process-wide; race-enabled plugins decoding
	// 10,000 containers need more than the default 2s.
	uadapt.SetPluginRegistrationTimeout(20 * time.Second)
	uadapt.SetPluginRequestTimeout(20 * time.Second)
	return m.Run()
}
