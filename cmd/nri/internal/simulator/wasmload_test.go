//go:build !nri_no_wasm

package simulator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
)

// wasmExampleGuest is the wasm.yaml example's plugin (../../examples/wasm-env)
// built as a WASM module (as nri run builds it: the same bytes), once per
// test binary, with the compilation cache the tests share.
var wasmExampleGuest = &wasmtest.Guest{Pkg: "../../examples/wasm-env"}

func TestMain(m *testing.M) {
	code := m.Run()
	wasmExampleGuest.Remove()
	os.Exit(code)
}

// wasmGuest returns the path of the guest module (mode 0644, as go build
// writes it), building it on first use; it skips the test if there is no
// go command to build it with.
func wasmGuest(t *testing.T) string {
	t.Helper()
	return wasmExampleGuest.Module(t)
}

// wasmCache is the compilation cache directory the tests share.
func wasmCache(t *testing.T) string {
	t.Helper()
	return wasmExampleGuest.CacheDir(t)
}

// playWASM starts, plays and stops sc; it returns the report.
func playWASM(t *testing.T, sc *scenario.Scenario, opts ...Option) *report.Report {
	t.Helper()
	opts = append([]Option{WithTimeouts(10*time.Second, 30*time.Second), WithWASMCacheDir(wasmCache(t))}, opts...)
	sim, err := New(sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Compiling the guest without the cache takes a minute with the race
	// detector.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	defer func() {
		if err := sim.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	start := time.Now()
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("started in %v", time.Since(start).Round(time.Millisecond))
	r, err := sim.Play(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkWASMRun checks that the run went as expected with the WASM plugin
// full active and called.
func checkWASMRun(t *testing.T, r *report.Report, full string) {
	t.Helper()
	if !r.OK {
		t.Fatalf("failures %v, registration errors %v", r.Failures, r.RegistrationErrors)
	}
	i := slices.IndexFunc(r.Plugins, func(p report.Plugin) bool { return p.ID == full })
	if i < 0 || r.Plugins[i].Kind != "wasm" || r.Plugins[i].Calls == 0 {
		t.Errorf("plugins %+v: want %s, kind wasm, called", r.Plugins, full)
	}
	if c := reportedContainer(r, "c"); c == nil || !slices.Contains(c.Env, "WASM_ENV_POD=ns/p") {
		t.Errorf("container c: %+v", c)
	}
}

// TestExtraWASMPlugin runs a WASM module that is not executable, given as
// an extra plugin, then as a file of an extra plugin directory. The
// module is group-writable (and, as root, another user's), which a
// runtime refuses in its plugin directory: the user named it, so the
// simulator installs a copy of its own.
func TestExtraWASMPlugin(t *testing.T) {
	defer goleak.VerifyNone(t)
	guest := wasmGuest(t)
	dir := t.TempDir()
	module := filepath.Join(dir, "50-wasm")
	data, err := os.ReadFile(guest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(module, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(module, 0o664); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(module, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	sc := loadScenario(t, t.TempDir(), wasmScenario, "")
	checkWASMRun(t, playWASM(t, sc, WithExtraPlugin(module)), "50-wasm")
	if entries, _ := os.ReadDir(wasmCache(t)); len(entries) == 0 {
		t.Error("nothing in the WASM cache directory")
	}

	sc = loadScenario(t, t.TempDir(), wasmScenario, "")
	checkWASMRun(t, playWASM(t, sc, WithExtraPluginDir(dir)), "50-wasm")
}

// TestScenarioWASMPath plays a scenario plugin whose path is a WASM
// module: it is installed as the module, not as a launcher script, and
// gets its configuration.
func TestScenarioWASMPath(t *testing.T) {
	defer goleak.VerifyNone(t)
	guest := wasmGuest(t)
	sc := loadScenario(t, filepath.Dir(guest), wasmScenario,
		"plugins:\n  - name: wasm\n    index: \"40\"\n    path: guest.wasm\n    config: |\n      FROM_CONFIG=yes\n")
	r := playWASM(t, sc)
	checkWASMRun(t, r, "40-wasm")
	if c := reportedContainer(r, "c"); c == nil || !slices.Contains(c.Env, "FROM_CONFIG=yes") {
		t.Errorf("the WASM plugin did not get its configuration: %+v", c)
	}
}
