package adaptation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// withWASMLoader replaces wasmhost.Load.
func withWASMLoader(f func(ctx context.Context, path string, opts wasmhost.Options) (*wasmhost.Plugin, error)) Option {
	return func(c *config) error { c.wasmLoad = f; return nil }
}

// installFakeWASM installs a minimal module (wasmtest.FakeModule) as
// full: it loads in milliseconds, and crashes at its first request.
func installFakeWASM(t testing.TB, rt *testRuntime, full string) {
	t.Helper()
	testGuest(t) // skips without WASM support
	must(t, os.WriteFile(filepath.Join(rt.dir, full), wasmtest.FakeModule(wasmhost.APIVersion, false, wasmhost.Funcs()), 0o644))
}

// wasmLoadOverlap returns the largest number of WASM plugins that were
// loading at once, from the order of wasmhost's log lines: each load
// starts with "loading WASM plugin module that is not executable" (the
// tests' modules are 0644) and ends with "loaded WASM plugin".
func wasmLoadOverlap(rt *testRuntime) (most, loaded int) {
	cur := 0
	for _, r := range rt.logs.find(func(logRecord) bool { return true }) {
		switch r.msg {
		case "loading WASM plugin module that is not executable (upstream NRI skips such files)":
			cur++
			most = max(most, cur)
		case "loaded WASM plugin":
			cur--
			loaded++
		}
	}
	return most, loaded
}

// TestWASMLoadsBounded checks that WASM plugins load (read, compile,
// instantiate) at most DefaultMaxConcurrentWASMLoads at a time, or what
// WithMaxConcurrentWASMLoads says, however many there are.
func TestWASMLoadsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, DefaultMaxConcurrentWASMLoads},
		{"one", []Option{WithMaxConcurrentWASMLoads(1)}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second), c.opts...)...)
			names := []string{"10-wa", "11-wb", "12-wc", "13-wd", "14-we"}
			for _, n := range names {
				installWASM(t, rt, n)
			}
			rt.start(t)
			most, loaded := wasmLoadOverlap(rt)
			if loaded != len(names) {
				t.Fatalf("%d WASM plugins loaded, want %d", loaded, len(names))
			}
			if most > c.want {
				t.Errorf("%d WASM plugins loaded at once, want at most %d", most, c.want)
			}
		})
	}
}

// TestWASMLoadWaitBounded checks that a WASM plugin waits for its turn
// to load at most the load timeout: with one load at a time and the
// first one stuck, the second fails, saying so, and Start is not held
// up by it.
func TestWASMLoadWaitBounded(t *testing.T) {
	const timeout = 300 * time.Millisecond
	release := make(chan struct{})
	var calls atomic.Int32
	stuck := func(ctx context.Context, path string, opts wasmhost.Options) (*wasmhost.Plugin, error) {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-time.After(hangGuard):
			}
		}
		return wasmhost.Load(ctx, path, opts)
	}
	rt := newTestRuntime(t, nil, WithDisabledExternalConnections(), WithMaxConcurrentWASMLoads(1),
		WithWASMLoadTimeout(timeout), withWASMLoader(stuck))
	installFakeWASM(t, rt, "10-wa")
	installFakeWASM(t, rt, "11-wb")
	started := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		started <- rt.a.Start(ctx)
	}()
	begin := time.Now()
	r := rt.logs.wait(t, "a plugin that waited too long", func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" && strings.Contains(r.attrs["error"], "for a turn to load (at most 1 WASM plugins load at once)")
	})
	if took := time.Since(begin); took > 10*timeout {
		t.Errorf("the waiting plugin failed after %v, want about %v", took, timeout)
	}
	if !strings.Contains(r.attrs["error"], "context deadline exceeded") {
		t.Errorf("error %q does not say the wait timed out", r.attrs["error"])
	}
	close(release)
	must(t, <-started)
}

// TestWASMMemoryBudget checks that WASM plugins reserve their memory
// limit in the budget: with two 64 MiB plugins and a budget of 100 MiB,
// one loads and the other is refused, saying why; Stop gives the
// reservation back.
func TestWASMMemoryBudget(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second),
		WithWASMMemoryLimit(64<<20), WithWASMMemoryBudget(100<<20))...)
	installWASM(t, rt, "10-wa")
	installWASM(t, rt, "11-wb")
	rt.start(t)
	active := 0
	for _, n := range []string{"10-wa", "11-wb"} {
		if _, ok := rt.plugin(n); ok {
			active++
		}
	}
	if active != 1 {
		t.Errorf("%d plugins active, want 1", active)
	}
	refused := rt.logs.find(func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" &&
			strings.Contains(r.attrs["error"], "its memory limit of 64 MiB exceeds what is left of the WASM memory budget (36 MiB of 100 MiB)")
	})
	if len(refused) != 1 {
		t.Errorf("%d plugins refused for the budget, want 1", len(refused))
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	must(t, rt.a.Stop(ctx))
	if r := rt.a.wasm.loads.reserved; r != 0 {
		t.Errorf("%d bytes still reserved after Stop", r)
	}
}

func TestWASMReserve(t *testing.T) {
	var w wasmLoads
	u1, err := w.reserve(100, 60)
	must(t, err)
	if _, err := w.reserve(100, 50); err == nil || !strings.Contains(err.Error(), "its memory limit of 50 bytes exceeds what is left of the WASM memory budget (40 bytes of 100 bytes)") {
		t.Errorf("reserving 50 of the 40 left: %v", err)
	}
	u2, err := w.reserve(100, 40)
	must(t, err)
	u1()
	u1() // once only
	if w.reserved != 40 {
		t.Errorf("reserved %d after giving 60 back, want 40", w.reserved)
	}
	u2()
	if _, err := w.reserve(0, 1<<40); err != nil {
		t.Errorf("no budget: %v", err)
	}
}

// TestWASMCacheDirRefused checks that a compilation cache directory
// others may write is not used: the runtime says why and keeps compiled
// modules in memory; the plugin loads.
func TestWASMCacheDirRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Chmod(dir, 0o770))
	rt := newTestRuntime(t, nil, WithDisabledExternalConnections(), WithWASMCacheDir(dir))
	installFakeWASM(t, rt, "10-wa")
	rt.start(t)
	if len(rt.logs.find(func(r logRecord) bool {
		return r.msg == "not using the WASM compilation cache directory: compiled modules are kept in memory only" &&
			strings.Contains(r.attrs["error"], "writable by its group or others")
	})) != 1 {
		t.Error("no log line saying the cache directory was refused")
	}
	if len(rt.logs.find(func(r logRecord) bool { return r.msg == "loaded WASM plugin" && r.attrs["cacheDir"] == "" })) != 1 {
		t.Error("the plugin was not loaded with the in-memory cache")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused directory was written to: %v", entries)
	}
}

func TestWASMLoadOptions(t *testing.T) {
	for name, o := range map[string]Option{
		"module size 7":          WithMaxWASMModuleSize(7),
		"0 concurrent loads":     WithMaxConcurrentWASMLoads(0),
		"load timeout 0":         WithWASMLoadTimeout(0),
		"config size 0":          WithMaxPluginConfigSize(0),
		"config size over 4 MiB": WithMaxPluginConfigSize(MaxMessageSize + 1),
	} {
		st := runtimetest.NewStore()
		if _, err := New("r", "v", st.List, st.Update, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
