// Package wasmtest builds Go packages into WASM plugin modules for the
// tests of the packages that load them (internal/wasmhost, adaptation,
// conformance, the simulator), once per test binary, and fills the
// on-disk compilation cache those tests share.
//
// Compiling a Go guest with a race-instrumented wazero takes most of a
// minute; internal/wasmhost's test binary built without the race
// detector does it in seconds. wazero's on-disk cache is keyed by the
// wazero version read from the build information, which is the same in
// every test binary, so a module that binary compiled loads from the
// cache in a race-enabled test binary of any package.
package wasmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/wasmbuild"
)

// PrecompileEnv names the variable that makes internal/wasmhost's test
// binary compile a module into a cache directory and exit: its value is
// the module's path and the directory, joined by os.PathListSeparator.
const PrecompileEnv = "WASMHOST_TEST_PRECOMPILE"

// buildTimeout bounds one go command.
const buildTimeout = 5 * time.Minute

// Guest is a Go package built as a WASM plugin module on first use and
// kept for the test binary's life. The zero value is not usable: set Pkg.
type Guest struct {
	// Pkg is the package's directory, relative to the test's working
	// directory (its package's directory) or absolute.
	Pkg string
	// Name is the module file's name, such as "10-template"; "guest.wasm"
	// if empty.
	Name string

	once sync.Once
	dir  string
	path string
	err  error
}

// GoTool returns the go command (the GO variable, else go on PATH), or
// skips the test if there is none.
func GoTool(tb testing.TB) string {
	tb.Helper()
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	g, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go command on PATH to build a WASM plugin with")
	}
	return g
}

// Module returns the path of the built module (mode 0644, as go build
// writes it). The first call builds it and, under the race detector,
// compiles it into CacheDir.
func (g *Guest) Module(tb testing.TB) string {
	tb.Helper()
	gocmd := GoTool(tb)
	g.once.Do(func() {
		start := time.Now()
		g.err = g.build(gocmd)
		if g.err == nil {
			tb.Logf("built the WASM guest %s in %v", g.Pkg, time.Since(start).Round(time.Millisecond))
		}
	})
	if g.err != nil {
		tb.Fatalf("WASM guest %s: %v", g.Pkg, g.err)
	}
	return g.path
}

// CacheDir returns the compilation cache directory of the tests that
// load the module (building it first if needed).
func (g *Guest) CacheDir(tb testing.TB) string {
	tb.Helper()
	g.Module(tb)
	return filepath.Join(g.dir, "cache")
}

// Remove removes the module and its cache; TestMain calls it.
func (g *Guest) Remove() {
	if g.dir != "" {
		_ = os.RemoveAll(g.dir)
	}
}

// build builds the module into a new directory and precompiles it under
// the race detector (precompileShared).
func (g *Guest) build(gocmd string) error {
	if g.Pkg == "" {
		return errors.New("no package")
	}
	dir, err := os.MkdirTemp("", "nrikit-wasm-guest-")
	if err != nil {
		return err
	}
	g.dir = dir
	name := g.Name
	if name == "" {
		name = "guest.wasm"
	}
	out := filepath.Join(dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if err := Build(ctx, gocmd, g.Pkg, out); err != nil {
		return err
	}
	if RaceEnabled {
		if err := precompileShared(ctx, gocmd, out, filepath.Join(dir, "cache")); err != nil {
			return err
		}
	}
	g.path = out
	return nil
}

// Build builds the Go package in pkgDir as a WASM plugin module at out:
// GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared, -trimpath.
func Build(ctx context.Context, gocmd, pkgDir, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := wasmbuild.Command(ctx, gocmd, pkgDir, abs)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared in %s: %w\n%s", pkgDir, err, b)
	}
	return nil
}

// Precompile compiles module into the compilation cache dir with
// internal/wasmhost's test binary built without the race detector (and
// -trimpath, so that a clone elsewhere reuses the compiled packages).
func Precompile(ctx context.Context, gocmd, module, dir string) error {
	bin := filepath.Join(filepath.Dir(dir), "precompile.test")
	cmd := exec.CommandContext(ctx, gocmd, "test", "-c", "-trimpath", "-o", bin, "github.com/nrikit/nrikit/internal/wasmhost")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building wasmhost's test binary without the race detector: %w\n%s", err, b)
	}
	cmd = exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), PrecompileEnv+"="+module+string(os.PathListSeparator)+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompiling %s: %w\n%s", module, err, b)
	}
	return nil
}
