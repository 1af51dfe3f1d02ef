package adaptation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/wasmtest"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// The WASM plugin of these tests is internal/wasmhost/testdata/guest,
// built once per test binary and compiled once into a compilation cache
// that every test shares.
var wasmGuest = &wasmtest.Guest{Pkg: "../internal/wasmhost/testdata/guest"}

// cleanupWASM removes what the tests built (run by TestMain).
func cleanupWASM() { wasmGuest.Remove() }

// testGuest returns the path of the built guest module; it skips the
// test in a build without WASM support.
func testGuest(t testing.TB) string {
	t.Helper()
	if c, err := wasmhost.NewCache(""); errors.Is(err, wasmhost.ErrDisabled) {
		t.Skip("built without WASM support (nri_no_wasm)")
	} else {
		must(t, c.Close(context.Background()))
	}
	return wasmGuest.Module(t)
}

// installWASM copies the guest into the runtime's plugin directory as
// full, not executable (c-shared output is 0644).
func installWASM(t testing.TB, rt *testRuntime, full string) {
	t.Helper()
	code, err := os.ReadFile(testGuest(t))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rt.dir, full), code, 0o644))
}

// wasmOptions are the options of every WASM test runtime: the shared
// compilation cache, short timeouts.
func wasmOptions(t testing.TB, timeout time.Duration) []Option {
	testGuest(t)
	return []Option{
		WithWASMCacheDir(wasmGuest.CacheDir(t)),
		WithRequestTimeout(timeout),
		WithDisabledExternalConnections(),
	}
}

// createNamed makes a CreateContainer request for a container named name
// in pod 0 and returns the environment of the merged adjustment.
func createNamed(t testing.TB, a *Adaptation, i int, name string) (map[string]string, time.Duration, error) {
	t.Helper()
	ctr := testCtr(0, i)
	ctr.Name = name
	start := time.Now()
	rsp, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: ctr})
	took := time.Since(start)
	env := map[string]string{}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	return env, took, err
}

// TestWASMPlugin checks a WASM plugin loaded from the plugin directory:
// its kind, its configuration file, its adjustment merged with a builtin
// plugin's, its output in the log under its name, and Shutdown on Stop.
func TestWASMPlugin(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second), WithBuiltinPlugin("20", "inproc", &inproc{}))...)
	installWASM(t, rt, "10-wasm")
	must(t, os.WriteFile(filepath.Join(rt.conf, "10-wasm.conf"), []byte("from the config dir"), 0o644))
	rt.start(t)

	info, ok := rt.plugin("10-wasm")
	if !ok {
		t.Fatalf("WASM plugin not registered: %+v", rt.a.Plugins())
	}
	if info.Kind != KindWASM || info.Kind.String() != "wasm" || info.State != StateActive {
		t.Errorf("plugin info %+v, want kind wasm, active", info)
	}
	env, _, err := createNamed(t, rt.a, 1, "adjust")
	must(t, err)
	if env["WASM_GUEST"] != "configured=from the config dir" || env["INPROC"] != "1" {
		t.Errorf("environment %v, want the WASM plugin's and the builtin plugin's", env)
	}
	if _, _, err := createNamed(t, rt.a, 2, "print"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"hello on stdout", "hello on stderr", "hello through env.log"} {
		rt.logs.wait(t, "guest output "+line, func(r logRecord) bool {
			return r.msg == line && r.attrs["plugin"] == "10-wasm"
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	must(t, rt.a.Stop(ctx))
	rt.logs.wait(t, "Shutdown on Stop", func(r logRecord) bool {
		return r.msg == "guest shutting down" && r.attrs["plugin"] == "10-wasm"
	})
}

// TestWASMContainment checks that a WASM plugin that loops forever,
// panics again and again or allocates without limit is contained: each
// request returns within twice the request timeout with the other
// plugin's adjustment, the runtime serves requests from another goroutine
// throughout, and, with a failure policy that keeps it, the plugin gets a
// fresh instance (its configuration replayed) after each crash; with
// either bound on its calls (the default counters and
// WithWASMContextChecks).
func TestWASMContainment(t *testing.T) {
	t.Run("counters", func(t *testing.T) { testWASMContainment(t) })
	t.Run("context checks", func(t *testing.T) { testWASMContainment(t, WithWASMContextChecks()) })
}

func testWASMContainment(t *testing.T, bound ...Option) {
	timeout := scaled(time.Second)
	keep := PluginPolicy{FailurePolicy: &api.FailurePolicy{KeepConnected: true}}
	rt := newTestRuntime(t, nil, append(append(wasmOptions(t, timeout),
		WithBuiltinPlugin("20", "inproc", &inproc{}),
		WithWASMMemoryLimit(64<<20),
		WithPluginOverride("10-wasm", keep)), bound...)...)
	installWASM(t, rt, "10-wasm")
	must(t, os.WriteFile(filepath.Join(rt.conf, "10-wasm.conf"), []byte("kept"), 0o644))
	rt.start(t)

	// Another goroutine creates containers throughout; each must succeed
	// with the builtin plugin's adjustment within the bound.
	stop := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		served   int
		failures []string
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			env, took, err := createNamed(t, rt.a, i, fmt.Sprintf("bystander-%d", i))
			mu.Lock()
			switch {
			case err != nil:
				failures = append(failures, err.Error())
			case env["INPROC"] != "1":
				failures = append(failures, fmt.Sprintf("no builtin adjustment: %v", env))
			case took > 2*timeout+scaled(time.Second):
				failures = append(failures, fmt.Sprintf("took %v", took))
			}
			served++
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	i := 1
	for _, fault := range []string{"loop", "panic", "panic", "panic", "alloc", "sleep"} {
		env, took, err := createNamed(t, rt.a, i, fault)
		i++
		if err != nil {
			t.Errorf("%s: request failed (the policy does not fail requests): %v", fault, err)
		}
		if took > 2*timeout+scaled(time.Second) {
			t.Errorf("%s: took %v, want at most about twice the request timeout %v", fault, took, timeout)
		}
		if env["INPROC"] != "1" || env["WASM_GUEST"] != "" {
			t.Errorf("%s: environment %v, want only the builtin plugin's", fault, env)
		}
		// The next call runs on a fresh instance, configured again.
		env, _, err = createNamed(t, rt.a, i, "adjust")
		i++
		if err != nil || env["WASM_GUEST"] != "configured=kept" {
			t.Errorf("after %s: environment %v, error %v; want the WASM plugin's adjustment", fault, env, err)
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 || served == 0 {
		t.Errorf("bystander requests: %d served, failures: %v", served, failures)
	}
	if info, ok := rt.plugin("10-wasm"); !ok || info.State != StateActive {
		t.Errorf("WASM plugin not kept: %+v", rt.a.Plugins())
	}
	count := func(prefix string) int {
		return len(rt.logs.find(func(r logRecord) bool {
			return strings.HasPrefix(r.msg, prefix) && r.attrs["plugin"] == "10-wasm"
		}))
	}
	// The loop and the sleep time out, the panics crash; the allocation
	// crashes when the guest finds no more memory, or times out if its
	// garbage collector thrashes near the limit first.
	crashes, timeouts := count("plugin crashed, keeping it"), count("plugin timed out, keeping it")
	if crashes < 3 || crashes+timeouts != 6 {
		t.Errorf("%d crash and %d timeout log lines, want 3 or 4 crashes and 6 faults", crashes, timeouts)
	}
}

// TestWASMDropped checks the default failure policy: a crashed WASM
// plugin is dropped and its request goes on without it; with restarts it
// is loaded again and serves.
func TestWASMDropped(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second),
		WithRestartLaunched(Backoff{Initial: 100 * time.Millisecond, Max: time.Second}))...)
	installWASM(t, rt, "10-wasm")
	rt.start(t)

	if _, _, err := createNamed(t, rt.a, 1, "panic"); err != nil {
		t.Fatalf("request failed (the default policy does not fail requests): %v", err)
	}
	rt.logs.wait(t, "drop", func(r logRecord) bool {
		return r.msg == "plugin disconnected" && r.attrs["plugin"] == "10-wasm" && strings.HasPrefix(r.attrs["reason"], "crashed during")
	})
	rt.logs.wait(t, "reload", func(r logRecord) bool {
		return r.msg == "restarting pre-installed plugin" && r.attrs["plugin"] == "10-wasm"
	})
	deadline := time.Now().Add(hangGuard)
	for {
		if info, ok := rt.plugin("10-wasm"); ok && info.State == StateActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WASM plugin not loaded again: %+v", rt.a.Plugins())
		}
		time.Sleep(10 * time.Millisecond)
	}
	env, _, err := createNamed(t, rt.a, 2, "adjust")
	if err != nil || env["WASM_GUEST"] != "configured=" {
		t.Errorf("after reloading: environment %v, error %v", env, err)
	}
}

// TestWASMBadModules checks the log lines of files the runtime cannot
// use: a module that is not an NRI plugin (an empty module) is refused
// with what it lacks and not loaded again; a plain file is skipped as
// neither executable nor WASM. The runtime starts regardless.
func TestWASMBadModules(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second),
		WithRestartLaunched(Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}))...)
	empty := []byte("\x00asm\x01\x00\x00\x00") // a valid, empty module
	must(t, os.WriteFile(filepath.Join(rt.dir, "10-empty"), empty, 0o644))
	must(t, os.WriteFile(filepath.Join(rt.dir, "20-text"), []byte("not a plugin\n"), 0o644))
	rt.start(t)

	failed := rt.logs.wait(t, "load failure", func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" && r.attrs["plugin"] == "10-empty"
	})
	if e := failed.attrs["error"]; !strings.Contains(e, "not an NRI plugin module") || !strings.Contains(e, "missing exports") {
		t.Errorf("load error %q, want the missing exports", e)
	}
	rt.logs.wait(t, "no retry", func(r logRecord) bool {
		return r.msg == "not restarting pre-installed plugin" && r.attrs["plugin"] == "10-empty"
	})
	rt.logs.wait(t, "text file skipped", func(r logRecord) bool {
		return strings.HasPrefix(r.msg, "skipping file in plugin directory: neither executable nor") &&
			strings.HasSuffix(r.attrs["path"], "20-text")
	})
	if len(rt.a.Plugins()) != 0 {
		t.Errorf("plugins %+v, want none", rt.a.Plugins())
	}
}

// TestWASMAnswerBounds: a WASM plugin's answer above the max answer size
// is refused before the host reads it, one with more updates than
// MaxUpdatesPerMessage before it is decoded; either is the plugin's
// failure (FailureOversize: with fail_request, the request fails naming
// it), and the plugin keeps its instance.
func TestWASMAnswerBounds(t *testing.T) {
	fail := PluginPolicy{FailurePolicy: &api.FailurePolicy{FailRequest: true}}
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second), WithPluginOverride("10-wasm", fail))...)
	installWASM(t, rt, "10-wasm")
	rt.start(t)
	for i, tc := range []struct {
		name string
		want func(error) bool
	}{
		{"updates", func(err error) bool {
			var count *AnswerCountError
			return errors.As(err, &count) && count.Limit == MaxUpdatesPerMessage && count.Bound == "update entries"
		}},
		{"big", func(err error) bool {
			var size *AnswerSizeError
			return errors.As(err, &size) && size.Limit == DefaultMaxAnswerSize && size.Size > 2<<20
		}},
	} {
		_, _, err := createNamed(t, rt.a, i+1, tc.name)
		var perr *PluginError
		if !errors.As(err, &perr) || perr.Kind != FailureOversize || perr.Plugin != "10-wasm" || !tc.want(err) {
			t.Errorf("%s: CreateContainer: %v, want the oversize failure of 10-wasm", tc.name, err)
		}
	}
	if n := rt.store.UpdateCalls(); n != 0 {
		t.Errorf("%d update calls, want none", n)
	}
	env, _, err := createNamed(t, rt.a, 3, "adjust")
	if err != nil || env["WASM_GUEST"] == "" {
		t.Fatalf("CreateContainer after the refused answers: %v, %v", env, err)
	}
	if n := len(rt.logs.find(func(r logRecord) bool { return r.msg == "made a fresh WASM plugin instance" })); n != 0 {
		t.Errorf("%d fresh instances, want the first one kept", n)
	}
}

// TestWASMSyncAboveMemory checks the bound on what a WASM plugin is
// sent in one Synchronize request: a container larger than half the
// plugin's memory limit travels alone in its part (the guest declares
// that it handles parts), and that part is refused before the guest sees
// it, as oversize, with the reason: the plugin does not start.
func TestWASMSyncAboveMemory(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second), WithWASMMemoryLimit(64<<20))...)
	installWASM(t, rt, "10-wasm")
	rt.store.AddPod(testPod(0))
	rt.store.AddCtr(testCtr(0, 1))
	big := testCtr(0, 2)
	big.Env = append(big.Env, "HUGE="+strings.Repeat("x", 33<<20))
	rt.store.AddCtr(big)
	rt.start(t)

	if info, ok := rt.plugin("10-wasm"); ok {
		t.Errorf("plugin started: %+v", info)
	}
	want := "a part of the snapshot (one object too large to share a part) is"
	rt.logs.wait(t, "the failure's reason", func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" && r.attrs["plugin"] == "10-wasm" &&
			strings.Contains(r.attrs["error"], want) && strings.Contains(r.attrs["error"], "more than half of the plugin's WASM memory limit of 64 MiB")
	})
}

// TestWASMNamedWithoutExtension checks that the runtime's log points out
// a grant, a required entry and a configuration file that name a WASM
// plugin 50-batchenv.wasm without the extension its file name gives it
// (it registers as batchenv.wasm, as upstream names it): none of them is
// the plugin's.
func TestWASMNamedWithoutExtension(t *testing.T) {
	pol := parsePolicy(t, "grants:\n  - plugins: [batchenv]\n    adjust: {env: [WASM_GUEST]}\n")
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 5*time.Second), WithPolicy(pol))...)
	installWASM(t, rt, "50-batchenv.wasm")
	must(t, os.WriteFile(filepath.Join(rt.conf, "50-batchenv.conf"), []byte("not read"), 0o644))
	rt.start(t)
	if _, ok := rt.plugin("50-batchenv.wasm"); !ok {
		t.Fatalf("WASM plugin not registered as 50-batchenv.wasm: %+v", rt.a.Plugins())
	}
	rt.logs.wait(t, "the configuration file named without the extension", func(r logRecord) bool {
		return strings.HasPrefix(r.msg, "configuration file not read") && r.attrs["plugin"] == "50-batchenv.wasm" &&
			r.attrs["file"] == "50-batchenv.conf" && r.attrs["want"] == "50-batchenv.wasm.conf"
	})
	rt.logs.wait(t, "the grant named without the extension", func(r logRecord) bool {
		return strings.HasPrefix(r.msg, "the policy names the plugin without the extension") && r.attrs["plugin"] == "50-batchenv.wasm" &&
			strings.Contains(fmt.Sprint(r.attrs["entries"]), "grants[0] names batchenv")
	})
}
