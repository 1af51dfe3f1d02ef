package legacystub

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// hangGuard bounds one checker run.
const hangGuard = 2 * time.Minute

// builds are the legacy plugin built on each upstream NRI version, by
// version; TestMain fills it.
var builds = map[string]string{}

// modfiles are the go.mod files of ../legacyplugin, by the NRI version
// they require.
var modfiles = map[string]string{"v0.11.0": "", "v0.10.0": "go.v0.10.0.mod"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "interop-legacystub-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	for version, modfile := range modfiles {
		bin, err := testbin.BuildModule(dir, "legacyplugin-"+version, "../legacyplugin", modfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		builds[version] = bin
	}
	return m.Run()
}

// TestPassesCheckPlugin runs the checker on the legacy plugin, on each
// NRI version, launched as a runtime launches it and as an external
// plugin: every check passes, the events without an RPC of their own in
// NRI v0.11 go through StateChange (the plugin fails one that comes
// without its pod or container, and a container event whose pod it was
// not told about), and its CreateContainer answer arrives.
func TestPassesCheckPlugin(t *testing.T) {
	for version, bin := range builds {
		for _, external := range []bool{false, true} {
			mode := "launched"
			if external {
				mode = "external"
			}
			t.Run(version+"/"+mode, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				var out bytes.Buffer
				cfg := conformance.PluginConfig{Command: []string{bin}, Name: "40-legacy", Output: &out, RequestTimeout: 10 * time.Second}
				if external {
					path := filepath.Join(shortDir(t), "nri.sock")
					l, err := net.Listen("unix", path)
					if err != nil {
						t.Fatal(err)
					}
					testbin.Start(t, bin, "-socket", path, "-name", "legacy", "-idx", "40")
					cfg = conformance.PluginConfig{Listener: l, Name: "40-legacy", RequestTimeout: 10 * time.Second}
				}
				rep, err := conformance.CheckPlugin(ctx, cfg)
				if err != nil {
					t.Fatalf("CheckPlugin: %v", err)
				}
				var text bytes.Buffer
				if err := rep.WriteText(&text); err != nil {
					t.Fatal(err)
				}
				if rep.Failed() {
					t.Fatalf("checks failed:\n%s\nplugin output:\n%s", text.String(), out.String())
				}
				res, ok := rep.Result(conformance.CheckStateChange)
				if !ok || !strings.Contains(res.Reason, api.StateChangeEvents.String()) {
					t.Errorf("%s: %+v; want every event of %s\n%s", conformance.CheckStateChange, res, api.StateChangeEvents, text.String())
				}
				if res, _ := rep.Result(conformance.EventCheckName(api.Event_CREATE_CONTAINER)); !strings.Contains(res.Reason, "adjusts env[LEGACY_PLUGIN]") {
					t.Errorf("CreateContainer: %q, want the plugin's variable", res.Reason)
				}
			})
		}
	}
}

// shortDir is a temporary directory with a path short enough for a unix
// socket.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
