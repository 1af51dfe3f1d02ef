//go:build !nri_no_wasm

package simulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/internal/report"
	"github.com/nrikit/nrikit/internal/scenario"
)

// The WASM guest (the wasm.yaml example's plugin, ../examples/wasm-env)
// is built once per test binary into guestDir, and compiled once into
// the compilation cache there, shared by the tests.
var (
	guestOnce sync.Once
	guestDir  string
	guestPath string
	guestErr  error
)

// precompileEnv names the variable that makes the test binary load a
// module ("module:cachedir") with a compilation cache directory, filling
// it, and exit.
const precompileEnv = "NRIKIT_SIMULATOR_PRECOMPILE"

func TestMain(m *testing.M) {
	if v := os.Getenv(precompileEnv); v != "" {
		module, dir, _ := strings.Cut(v, string(os.PathListSeparator))
		if err := precompile(module, dir); err != nil {
			fmt.Fprintln(os.Stderr, "precompiling:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if guestDir != "" {
		_ = os.RemoveAll(guestDir)
	}
	os.Exit(code)
}

// precompile starts a runtime with the WASM plugin module (named
// IDX-NAME) and the compilation cache dir, and stops it.
func precompile(module, dir string) error {
	sc, err := scenario.Parse("precompile.yaml", []byte("pods: [{name: p}]\nsteps: [{runPod: p}]\n"))
	if err != nil {
		return err
	}
	sim, err := New(sc, WithExtraPlugin(module), WithWASMCacheDir(dir))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err = sim.Start(ctx)
	if len(sim.registrationErrors()) > 0 {
		err = errors.Join(err, fmt.Errorf("%v", sim.registrationErrors()))
	}
	return errors.Join(err, sim.Stop(ctx))
}

// wasmGuest returns the path of the guest module (mode 0644, as go build
// writes it), building it on first use; it skips the test if there is no
// go command to build it with.
func wasmGuest(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH to build the WASM guest with")
	}
	guestOnce.Do(func() { guestErr = buildGuest(t) })
	if guestErr != nil {
		t.Fatalf("building the WASM guest: %v", guestErr)
	}
	return guestPath
}

// buildGuest builds the guest into guestDir. With the race detector,
// where compiling the module takes a minute, this package's test binary
// built without it fills the compilation cache first, in seconds (a
// test binary: wazero's cache is specific to the version it reads from
// the build information).
func buildGuest(t *testing.T) error {
	dir, err := os.MkdirTemp("", "simulator-wasm-")
	if err != nil {
		return err
	}
	guestDir = dir
	pkg, err := filepath.Abs(filepath.Join("..", "examples", "wasm-env"))
	if err != nil {
		return err
	}
	out := filepath.Join(dir, "guest.wasm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := buildWASM(ctx, slog.New(slog.DiscardHandler), "guest", pkg, out); err != nil {
		return err
	}
	t.Logf("built the guest in %v", time.Since(start).Round(time.Millisecond))
	if raceEnabled {
		start = time.Now()
		bin := filepath.Join(dir, "precompile.test")
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building the test binary without the race detector: %w\n%s", err, b)
		}
		named := filepath.Join(dir, "50-guest")
		if err := os.Symlink(out, named); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, bin)
		cmd.Env = append(os.Environ(), precompileEnv+"="+named+string(os.PathListSeparator)+filepath.Join(dir, "cache"))
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("precompiling the guest: %w\n%s", err, b)
		}
		t.Logf("precompiled the guest in %v", time.Since(start).Round(time.Millisecond))
	}
	guestPath = out
	return nil
}

// wasmCache is the compilation cache directory the tests share.
func wasmCache(t *testing.T) string {
	t.Helper()
	wasmGuest(t)
	return filepath.Join(guestDir, "cache")
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
// an extra plugin, then as a file of an extra plugin directory.
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
	sc := loadScenario(t, t.TempDir(), wasmScenario, "")
	checkWASMRun(t, playWASM(t, sc, WithExtraPlugin(module)), "50-wasm")
	if entries, _ := os.ReadDir(filepath.Join(guestDir, "cache")); len(entries) == 0 {
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
