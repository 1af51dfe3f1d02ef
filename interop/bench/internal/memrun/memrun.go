// Package memrun is the body of the memory benchmark's runtime processes
// (bench/runtimes/*): start a runtime with the plugins of a directory, send
// CreateContainer and PostStartContainer requests, and print the process's
// resident memory (workload.Memory, then VmRSS again once garbage is
// collected and returned to the system) and how long the runtime took to
// start (see Parse); with -day, the node's day instead (see runDay and
// ParseDay).
package memrun

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// Runtime is what the nrikit and upstream benchmark runtimes have in common.
type Runtime interface {
	Plugins() int
	Prepare(n int)
	Create(ctx context.Context, i int) (int, error)
	PostStart(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Setup is where a runtime finds its plugins.
type Setup struct {
	// PluginDir holds the pre-installed plugins, ConfigDir their
	// configuration files (IDX-NAME.conf; "" for none).
	PluginDir, ConfigDir string
	// WASMCacheDir is the on-disk compilation cache of WASM modules (""
	// for none; nrikit only, upstream has no cache).
	WASMCacheDir string
	// Pods and Ctrs are the node's existing pods and containers (the
	// node's day; none otherwise).
	Pods []*api.PodSandbox
	Ctrs []*api.Container
	// Existing is the number of existing containers (workload.Existing)
	// the runtime starts with and synchronizes its plugins with. The
	// runtime calls workload.ResetPeak once it holds them, before it
	// starts: the VmHWM printed is the peak of registration and
	// Synchronize, the containers' listing included.
	Existing int
}

// StartFunc starts a runtime with the plugins of s and the existing pods
// and containers of s.
type StartFunc func(ctx context.Context, s Setup) (Runtime, error)

// Main parses the flags (-plugins, -config, -wasm-cache, -n, -want,
// -existing, -day, -pods), runs
// the benchmark with the runtime start returns, and exits non-zero on
// error, naming the runtime.
func Main(name string, start StartFunc) {
	var s Setup
	flag.StringVar(&s.PluginDir, "plugins", "", "plugin directory")
	flag.StringVar(&s.ConfigDir, "config", "", "plugin configuration directory")
	flag.StringVar(&s.WASMCacheDir, "wasm-cache", "", "WASM compilation cache directory")
	n := flag.Int("n", 1000, "requests of each kind")
	want := flag.Int("want", 0, "plugins that must be registered")
	day := flag.Duration("day", 0, "send the node's day for this long instead (see runDay)")
	pods := flag.Int("pods", 110, "with -day: the node's pods")
	flag.IntVar(&s.Existing, "existing", 0, "existing containers to synchronize plugins with")
	flag.Parse()
	err := error(nil)
	if *day > 0 {
		err = runDay(start, s, *day, *pods, *want)
	} else {
		err = run(start, s, *n, *want)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s bench runtime: %v\n", name, err)
		os.Exit(1)
	}
}

func run(start StartFunc, s Setup, n, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	rt, err := start(ctx, s)
	took := time.Since(begin)
	if err != nil {
		return err
	}
	defer rt.Stop(ctx)
	if got := rt.Plugins(); got != want {
		return fmt.Errorf("%d plugins registered, want %d", got, want)
	}
	rt.Prepare(n)
	for i := range n {
		if _, err := rt.Create(ctx, i); err != nil {
			return err
		}
		if err := rt.PostStart(ctx); err != nil {
			return err
		}
	}
	rt.Prepare(0)
	m, err := workload.ReadMemory(0)
	if err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	settled, err := workload.ReadMemory(0)
	if err != nil {
		return err
	}
	if err := writeMemoryProfiles(fmt.Sprintf("%s.%d", filepath.Base(os.Args[0]), os.Getpid())); err != nil {
		return err
	}
	fmt.Printf("%s\nsettled-rss-kib=%d\nstart-ns=%d\n", m, settled.RSSKiB, took.Nanoseconds())
	return nil
}

// Result is what a runtime process printed.
type Result struct {
	// Memory is the process's resident memory after the requests.
	Memory workload.Memory
	// SettledRSSKiB is VmRSS after that, once garbage is collected and
	// freed memory returned to the system (runtime/debug.FreeOSMemory):
	// what the process keeps.
	SettledRSSKiB int64
	// Start is how long starting the runtime took, until its plugins
	// were synchronized.
	Start time.Duration
}

// Parse reads the output of a runtime process.
func Parse(out string) (Result, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	m, err := workload.ParseMemory(lines[0])
	if err != nil {
		return Result{}, fmt.Errorf("memrun: %w", err)
	}
	vals := map[string]int64{}
	for _, line := range lines[1:] {
		key, val, _ := strings.Cut(line, "=")
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return Result{}, fmt.Errorf("memrun: parsing %q: %w", line, err)
		}
		vals[key] = v
	}
	settled, ok1 := vals["settled-rss-kib"]
	start, ok2 := vals["start-ns"]
	if !ok1 || !ok2 {
		return Result{}, fmt.Errorf("memrun: output %q lacks settled-rss-kib or start-ns", out)
	}
	return Result{Memory: m, SettledRSSKiB: settled, Start: time.Duration(start)}, nil
}

// writeMemoryProfiles writes, when $BENCH_HEAPPROFILE_DIR is set, what a
// runtime process keeps after its requests (once its garbage is collected
// and returned): the live heap's profile to <dir>/<name>.heap.pprof, and
// its mappings with their resident sizes (/proc/self/smaps) to
// <dir>/<name>.smaps (name: the executable's and the process ID), which
// show what is not heap: the executable's pages, wazero's machine code,
// a WASM guest's linear memory.
func writeMemoryProfiles(name string) error {
	dir := os.Getenv("BENCH_HEAPPROFILE_DIR")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, name+".heap.pprof"))
	if err != nil {
		return fmt.Errorf("memrun: heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("memrun: heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("memrun: heap profile: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("memrun: reading the mappings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".smaps"), smaps, 0o644); err != nil {
		return fmt.Errorf("memrun: writing the mappings: %w", err)
	}
	return nil
}
