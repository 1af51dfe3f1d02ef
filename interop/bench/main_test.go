package bench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/interop/bench/internal/nrirt"
)

// ldflags make the two api packages' identical protobuf registrations
// harmless (see the top-level Makefile).
const ldflags = "-ldflags=-X=google.golang.org/protobuf/reflect/protoregistry.conflictPolicy=ignore"

// binaries are the executables TestMain builds for the benchmarks. They
// are set once, before any benchmark runs, and read-only afterwards.
type binaries struct {
	nrikitPlugin, upstreamPlugin string
	// recorderPlugin is nrikit's recorder (nri record, issue 41).
	recorderPlugin                 string
	nrikitRuntime, upstreamRuntime string
	// wasmNrikit and wasmUpstream are the WASM plugin modules, built
	// with nrikit's stub/wasmguest and with upstream's glue.
	wasmNrikit, wasmUpstream string
}

var bins binaries

// defaultRounds is how many rounds BenchmarkNRI runs without
// BENCH_ROUNDS.
const defaultRounds = 3

// benchRounds returns how many rounds BenchmarkNRI runs each scenario:
// the environment variable BENCH_ROUNDS (an environment variable, not a
// flag, so that `make bench-compare` can set it for older commits too,
// whose test binaries would refuse an unknown flag), 3 by default.
func benchRounds() int {
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return min(n, 100)
		}
		fmt.Fprintf(os.Stderr, "BENCH_ROUNDS=%q is not a number of rounds in [1, 100]; running %d\n", v, defaultRounds)
	}
	return defaultRounds
}

// TestMain builds the plugin and runtime binaries once, only when
// benchmarks run (plain `go test` stays cheap).
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "nri-bench-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "building benchmark binaries:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(dir string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("finding the go command: %w", err)
	}
	for _, b := range []struct {
		dst  *string
		pkg  string
		wasm bool
		// dir is where the go command runs (default: this package's
		// directory, in the interop module).
		dir string
	}{
		{&bins.nrikitPlugin, "./plugins/nrikit", false, ""},
		{&bins.upstreamPlugin, "./plugins/upstream", false, ""},
		{&bins.nrikitRuntime, "./runtimes/nrikit", false, ""},
		{&bins.upstreamRuntime, "./runtimes/upstream", false, ""},
		{&bins.wasmNrikit, "./plugins/wasmnrikit", true, ""},
		{&bins.wasmUpstream, "./plugins/wasmupstream", true, ""},
		// In the main module: its dependencies (Prometheus) are not the
		// interop module's.
		{&bins.recorderPlugin, "./plugins/recorder/cmd/recorder", false, "../.."},
	} {
		out := filepath.Join(dir, filepath.Base(filepath.Dir(b.pkg))+"-"+filepath.Base(b.pkg))
		args := []string{"build", ldflags}
		if b.pkg == "./plugins/nrikit" && profilePlugins() {
			args = append(args, "-tags=benchprofile")
		}
		cmd := exec.Command(gobin, append(args, "-o", out, b.pkg)...)
		if b.wasm {
			// A WASM plugin is a library module (a command is refused),
			// executable for upstream's discovery.
			out += ".wasm"
			cmd = exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, b.pkg)
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
		}
		cmd.Dir = b.dir
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", b.pkg, err)
		}
		if b.wasm {
			if err := os.Chmod(out, 0o755); err != nil {
				return fmt.Errorf("go build %s: %w", b.pkg, err)
			}
		}
		*b.dst = out
	}
	return nil
}

// profilePlugins reports whether the nrikit plugins are asked to profile
// themselves (BENCH_PLUGIN_ENV holds BENCH_CPUPROFILE_DIR=…): only then is
// the plugin built with its profiler (the benchprofile tag), whose
// executable pages would otherwise count in its resident memory.
func profilePlugins() bool {
	return slices.ContainsFunc(nrirt.PluginEnv(), func(kv string) bool { return strings.HasPrefix(kv, "BENCH_CPUPROFILE_DIR=") })
}
