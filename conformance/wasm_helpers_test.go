package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/wasmhost"
)

// The WASM tests build plugins/template for wasip1 once per test binary,
// into wasmWork, and compile it once into wasmWork's compilation cache.
var (
	wasmWorkOnce sync.Once
	wasmWork     string
	wasmWorkErr  error

	templateOnce sync.Once
	templatePath string
	templateErr  error
)

// precompileEnv names the variable that makes the test binary compile a
// module into a compilation cache ("module" + os.PathListSeparator +
// "dir") and exit: a race-instrumented wazero compiles a Go guest in a
// minute, this package's test binary built without the race detector in
// seconds, and wazero's on-disk cache does not depend on the race
// detector.
const precompileEnv = "CONFORMANCE_WASM_PRECOMPILE"

// precompile compiles the module of v into its cache and returns the exit
// status.
func precompile(v string) int {
	module, dir, _ := strings.Cut(v, string(os.PathListSeparator))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := wasmhost.Load(ctx, module, wasmhost.Options{CacheDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = p.Close(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "precompiling:", err)
		return 1
	}
	return 0
}

// wasmWorkDir returns the directory of the WASM tests' files, made on
// first use and removed by TestMain.
func wasmWorkDir(tb testing.TB) string {
	tb.Helper()
	wasmWorkOnce.Do(func() { wasmWork, wasmWorkErr = os.MkdirTemp("", "conformance-wasm-") })
	if wasmWorkErr != nil {
		tb.Fatal(wasmWorkErr)
	}
	return wasmWork
}

// removeWASMWorkDir removes the directory of wasmWorkDir, if made.
func removeWASMWorkDir() {
	if wasmWork != "" {
		_ = os.RemoveAll(wasmWork)
	}
}

// wasmCacheDir is the compilation cache the WASM tests share.
func wasmCacheDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(wasmWorkDir(tb), "cache")
}

// goTool returns the go command, or skips the test without one.
func goTool(tb testing.TB) string {
	tb.Helper()
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	g, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("go is not on PATH: cannot build a WASM plugin")
	}
	return g
}

// templateModule returns plugins/template built as a WASM plugin module,
// installed as a runtime would find it: named IDX-NAME, without an
// extension, mode 0644. The first call builds it (and, under the race
// detector, fills the compilation cache).
func templateModule(tb testing.TB) string {
	tb.Helper()
	gocmd := goTool(tb)
	dir := wasmWorkDir(tb)
	templateOnce.Do(func() {
		out := filepath.Join(dir, "10-template")
		start := time.Now()
		cmd := exec.Command(gocmd, "build", "-trimpath", "-buildmode=c-shared", "-o", out, "../plugins/template")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			templateErr = fmt.Errorf("building plugins/template for wasip1: %w\n%s", err, b)
			return
		}
		if err := os.Chmod(out, 0o644); err != nil {
			templateErr = err
			return
		}
		tb.Logf("built plugins/template for wasip1 in %v", time.Since(start))
		if raceEnabled {
			start = time.Now()
			if templateErr = precompileOutsideRace(gocmd, out, wasmCacheDir(tb)); templateErr != nil {
				return
			}
			tb.Logf("precompiled it in %v", time.Since(start))
		}
		templatePath = out
	})
	if templateErr != nil {
		tb.Fatal(templateErr)
	}
	return templatePath
}

// precompileOutsideRace compiles module into the cache dir with this
// package's test binary built without the race detector.
func precompileOutsideRace(gocmd, module, dir string) error {
	bin := filepath.Join(filepath.Dir(module), "precompile.test")
	cmd := exec.Command(gocmd, "test", "-c", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the test binary without the race detector: %w\n%s", err, b)
	}
	cmd = exec.Command(bin)
	cmd.Env = append(os.Environ(), precompileEnv+"="+module+string(os.PathListSeparator)+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompiling %s: %w\n%s", module, err, b)
	}
	return nil
}
