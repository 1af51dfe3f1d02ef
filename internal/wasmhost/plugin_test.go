//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

func TestConfigureAndCreateContainer(t *testing.T) {
	p, _ := load(t, Options{})
	rsp := configure(t, p, "hello")
	want := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER)
	if got := api.EventMask(rsp.GetEvents()); got != want {
		t.Errorf("subscription = %s, want %s", got, want)
	}
	ccr, err := createContainer(t, p, testscale.D(5*time.Second), "adjust")
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if v, ok := envOf(ccr.GetAdjust(), "WASM_GUEST"); !ok || v != "configured=hello" {
		t.Errorf("adjustment env WASM_GUEST = %q (set: %v), want %q", v, ok, "configured=hello")
	}
	if g := p.Generation(); g != 1 {
		t.Errorf("Generation = %d, want 1", g)
	}
}

func TestGuestError(t *testing.T) {
	p, _ := load(t, Options{})
	configure(t, p, "")
	for _, tc := range []struct{ name, want string }{
		{"fail", "refused on purpose"},
		{"handler-panic", "CreateContainer handler panicked: handler panicked on purpose"},
	} {
		_, err := createContainer(t, p, testscale.D(5*time.Second), tc.name)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Kind != KindGuest || ce.Discarded {
			t.Fatalf("%s: error %v, want a guest error keeping the instance", tc.name, err)
		}
		if !strings.Contains(ce.Message, tc.want) {
			t.Errorf("%s: message %q, want it to contain %q", tc.name, ce.Message, tc.want)
		}
	}
	if g := p.Generation(); g != 1 {
		t.Errorf("Generation = %d after guest errors, want 1 (instance kept)", g)
	}
	if _, err := createContainer(t, p, testscale.D(5*time.Second), "adjust"); err != nil {
		t.Errorf("CreateContainer after guest errors: %v", err)
	}
}

// reinitWith returns an Options.Reinit that replays Configure with config
// and counts its calls.
func reinitWith(t *testing.T, config string, count *atomic.Int32) func(context.Context, func(context.Context, string, []byte) ([]byte, error)) error {
	req, err := proto.Marshal(&api.ConfigureRequest{Config: config, RuntimeName: "wasmhost-test"})
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, call func(context.Context, string, []byte) ([]byte, error)) error {
		count.Add(1)
		_, err := call(ctx, FuncConfigure, req)
		return err
	}
}

func TestEndlessLoopIsStopped(t *testing.T) {
	var reinits atomic.Int32
	p, _ := load(t, Options{Reinit: reinitWith(t, "again", &reinits)})
	configure(t, p, "first")
	const timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := createContainer(t, p, timeout, "loop")
	took := time.Since(start)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout || !ce.Discarded {
		t.Fatalf("endless loop: error %v, want a timeout discarding the instance", err)
	}
	if took > 2*timeout {
		t.Errorf("endless loop stopped after %v, want at most %v", took, 2*timeout)
	}
	rsp, err := createContainer(t, p, testscale.D(5*time.Second), "adjust")
	if err != nil {
		t.Fatalf("CreateContainer after the timeout: %v", err)
	}
	if v, _ := envOf(rsp.GetAdjust(), "WASM_GUEST"); v != "configured=again" {
		t.Errorf("fresh instance answered WASM_GUEST=%q, want configured=again (Reinit replayed)", v)
	}
	if g, n := p.Generation(), reinits.Load(); g != 2 || n != 1 {
		t.Errorf("Generation = %d, Reinit calls = %d; want 2 and 1", g, n)
	}
}

func TestLongSleepIsStopped(t *testing.T) {
	p, _ := load(t, Options{})
	configure(t, p, "")
	const timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := createContainer(t, p, timeout, "sleep")
	took := time.Since(start)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTimeout || !ce.Discarded {
		t.Fatalf("hour-long sleep: error %v, want a timeout discarding the instance", err)
	}
	if took > 2*timeout {
		t.Errorf("hour-long sleep stopped after %v, want at most %v", took, 2*timeout)
	}
}

func TestRepeatedPanicsAreContained(t *testing.T) {
	var reinits atomic.Int32
	p, logs := load(t, Options{Name: "10-panicky", Reinit: reinitWith(t, "", &reinits)})
	healthy, _ := load(t, Options{Name: "20-healthy"})
	configure(t, p, "")
	configure(t, healthy, "ok")
	const calls = 60
	start := time.Now()
	for i := range calls {
		_, err := createContainer(t, p, testscale.D(5*time.Second), "panic")
		var ce *CallError
		// A Go guest's unrecovered panic ends in runtime.abort: an
		// "unreachable" trap, not an exit, so the module stays open.
		if !errors.As(err, &ce) || ce.Kind != KindTrap || !ce.Discarded || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("call %d: error %v, want an unreachable trap discarding the instance", i, err)
		}
		rsp, err := createContainer(t, healthy, testscale.D(5*time.Second), "adjust")
		if err != nil {
			t.Fatalf("healthy plugin, call %d: %v", i, err)
		}
		if v, _ := envOf(rsp.GetAdjust(), "WASM_GUEST"); v != "configured=ok" {
			t.Fatalf("healthy plugin, call %d: WASM_GUEST=%q", i, v)
		}
	}
	t.Logf("%d panics (each with a fresh instance) in %v", calls, time.Since(start))
	if g := p.Generation(); g != calls {
		t.Errorf("Generation = %d, want %d (the first instance, then one per discarded one)", g, calls)
	}
	if n := reinits.Load(); n != calls-1 {
		t.Errorf("Reinit calls = %d, want %d", n, calls-1)
	}
	if !logs.contains("panic: guest goroutine panicked on purpose") || !logs.contains("plugin=10-panicky") {
		t.Errorf("the guest's panic message is not in the plugin's log:\n%.2000s", logs.String())
	}
	if _, err := createContainer(t, p, testscale.D(5*time.Second), "adjust"); err != nil {
		t.Errorf("CreateContainer after %d panics: %v", calls, err)
	}
}

func TestMemoryLimit(t *testing.T) {
	p, logs := load(t, Options{MemoryLimitPages: 512})
	configure(t, p, "")
	_, err := createContainer(t, p, testscale.D(20*time.Second), "alloc")
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindTrap || !ce.Discarded {
		t.Fatalf("unbounded allocation: error %v, want a trap discarding the instance", err)
	}
	t.Logf("unbounded allocation: %v", err)
	if !strings.Contains(ce.Error(), "of 512 pages") {
		t.Errorf("error %q does not report the memory limit", ce)
	}
	if !logs.contains("out of memory") {
		t.Errorf("the guest's out-of-memory message is not in the log:\n%.2000s", logs.String())
	}
	if _, err := createContainer(t, p, testscale.D(5*time.Second), "adjust"); err != nil {
		t.Errorf("CreateContainer after running out of memory: %v", err)
	}
}

func TestOutputIsLogged(t *testing.T) {
	p, logs := load(t, Options{Name: "30-printer"})
	configure(t, p, "")
	if _, err := createContainer(t, p, testscale.D(5*time.Second), "print"); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	for _, want := range []string{
		`level=INFO msg="hello on stdout" plugin=30-printer stream=stdout`,
		`level=INFO msg="hello on stderr" plugin=30-printer stream=stderr`,
		`level=WARN msg="hello through env.log" plugin=30-printer stream=env.log`,
	} {
		if !logs.contains(want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestNonExecutableModuleIsLoaded(t *testing.T) {
	src := guest(t)
	dst := filepath.Join(t.TempDir(), "10-plain")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Load(ctx, dst, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), CacheDir: testGuest.CacheDir(t)})
	if err != nil {
		t.Fatalf("Load of a 0644 module: %v", err)
	}
	defer p.Close(ctx)
	if !logs.contains("not executable") {
		t.Errorf("no log line about the module not being executable:\n%s", logs)
	}
}

// commandModule is a minimal module exporting only _start, like a Go
// program built without -buildmode=c-shared.
var commandModule = []byte{
	0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
	0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
	0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export "_start"
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code: empty body
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{Logger: slog.New(slog.DiscardHandler)}

	if _, err := Load(ctx, write("10-script", []byte("#!/bin/sh\nexit 0\n")), opts); !errors.Is(err, ErrNotWasm) {
		t.Errorf("Load of a script: %v, want ErrNotWasm", err)
	}
	if _, err := Load(ctx, filepath.Join(dir, "missing"), opts); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want ErrNotExist", err)
	}
	_, err := Load(ctx, write("10-command", commandModule), opts)
	var ee *ExportError
	if !errors.As(err, &ee) {
		t.Fatalf("Load of a command module: %v, want an ExportError", err)
	}
	if !strings.Contains(err.Error(), "-buildmode=c-shared") || !strings.Contains(err.Error(), "plugin_create_container") {
		t.Errorf("ExportError %q should name the missing exports and the c-shared hint", err)
	}
	if len(ee.Missing) != len(Funcs())+4 { // + plugin_api_version, malloc, free, memory
		t.Errorf("Missing = %v, want all %d exports", ee.Missing, len(Funcs())+4)
	}
}

func TestFakeModules(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	load := func(name string, m []byte) (*Plugin, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, m, 0o755); err != nil {
			t.Fatal(err)
		}
		return Load(ctx, path, opts)
	}

	p, err := load("10-good", fakeModule(APIVersion, false))
	if err != nil {
		t.Fatalf("Load of a minimal module with every export: %v", err)
	}
	// Its malloc returns 0 for a non-empty request: an ABI violation.
	_, err = p.Call(ctx, EventFunc(api.Event_CREATE_CONTAINER), []byte{0x0a, 0x00})
	var ce *CallError
	if !errors.As(err, &ce) || ce.Kind != KindABI || !ce.Discarded {
		t.Errorf("request on a module whose malloc returns 0: %v, want an ABI error", err)
	}
	// Its requests answer 0: an empty, successful response.
	if out, err := p.Call(ctx, FuncShutdown, nil); err != nil || len(out) != 0 {
		t.Errorf("empty request answered 0: (%q, %v), want an empty success", out, err)
	}
	if g := p.Generation(); g != 2 {
		t.Errorf("Generation = %d, want 2 (the ABI violation discarded the first instance)", g)
	}
	if err := p.Close(ctx); err != nil {
		t.Error(err)
	}

	_, err = load("20-v2", fakeModule(2, false))
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 2 || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("Load of a version 2 module: %v, want a VersionError for 2", err)
	}

	_, err = load("30-badmalloc", fakeModule(APIVersion, true))
	var ee *ExportError
	if !errors.As(err, &ee) || len(ee.Missing) != 0 || len(ee.Mismatched) != 1 || !strings.Contains(err.Error(), "malloc is (i32) -> (), want (i32) -> (i32)") {
		t.Errorf("Load of a module with a wrong malloc: %v, want an ExportError naming malloc's signature", err)
	}
}

func TestCallAfterCloseAndUnknownFunc(t *testing.T) {
	p, _ := load(t, Options{})
	ctx := context.Background()
	if _, err := p.Call(ctx, "plugin_api_version", nil); err == nil {
		t.Error("Call of plugin_api_version succeeded, want an error (not a request function)")
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := p.Call(ctx, FuncShutdown, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
}

func TestConcurrentCallsAreSerialised(t *testing.T) {
	p, _ := load(t, Options{})
	configure(t, p, "c")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := createContainer(t, p, testscale.D(10*time.Second), "adjust"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent CreateContainer: %v", err)
	}
}

func TestSharedCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache, err := NewCache(testGuest.CacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cache.Close(ctx); err != nil {
			t.Errorf("closing the cache: %v", err)
		}
	}()
	if _, err := Load(ctx, guest(t), Options{Cache: cache, CacheDir: "x", Logger: slog.New(slog.DiscardHandler)}); err == nil {
		t.Error("Load with both Cache and CacheDir succeeded")
	}
	a, aLogs := load(t, Options{Name: "10-a", Cache: cache, CacheDir: "-"})
	b, bLogs := load(t, Options{Name: "20-b", Cache: cache, CacheDir: "-"})
	configure(t, a, "a")
	configure(t, b, "b")
	// env.log reaches the log of the calling plugin in the shared runtime.
	if _, err := createContainer(t, b, testscale.D(5*time.Second), "print"); err != nil {
		t.Fatal(err)
	}
	if !bLogs.contains("hello through env.log") || aLogs.contains("hello through env.log") {
		t.Errorf("b's env.log message went to the wrong plugin's log:\na: %s\nb: %s", aLogs, bLogs)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatalf("closing a: %v", err)
	}
	rsp, err := createContainer(t, b, testscale.D(5*time.Second), "adjust")
	if err != nil {
		t.Fatalf("CreateContainer on b after a closed: %v", err)
	}
	if v, _ := envOf(rsp.GetAdjust(), "WASM_GUEST"); v != "configured=b" {
		t.Errorf("b answered WASM_GUEST=%q, want configured=b", v)
	}
}

// TestCloseDuringCall: closing a plugin while its call runs without end,
// under either bound of a call, returns within Close's context and ends
// the call with a CallError. The "scribble" guest writes to its memory
// all the while: the memory stays mapped until the call has returned (an
// unmap under the call would kill the test process), and is unmapped
// then.
func TestCloseDuringCall(t *testing.T) {
	for _, guest := range []string{"loop", "scribble"} {
		for _, fuel := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fuel=%v", guest, fuel), func(t *testing.T) {
				p, _ := load(t, Options{FuelChecks: fuel})
				configure(t, p, "")
				const timeout = time.Second
				done := make(chan error, 1)
				go func() {
					_, err := createContainer(t, p, timeout, guest)
					done <- err
				}()
				time.Sleep(100 * time.Millisecond) // let the call start
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				start := time.Now()
				_ = p.Close(ctx)
				if took := time.Since(start); took > timeout {
					t.Errorf("Close took %v with a call running, want it bounded by its context", took)
				}
				select {
				case err := <-done:
					var ce *CallError
					if !errors.As(err, &ce) {
						t.Errorf("the running call ended with %v, want a CallError", err)
					}
				case <-time.After(10 * timeout):
					t.Fatal("the running call did not end")
				}
				if _, err := p.Call(context.Background(), FuncShutdown, nil); !errors.Is(err, ErrClosed) {
					t.Errorf("Call after Close: %v, want ErrClosed", err)
				}
				p.mem.mu.Lock()
				running, freed := p.mem.running, len(p.mem.freed)
				p.mem.mu.Unlock()
				if running != 0 || freed != 0 {
					t.Errorf("after the call, %d users and %d memories left to unmap", running, freed)
				}
			})
		}
	}
}

// TestInitializeLogsToPlugin: what the guest logs through env.log while
// it initialises (in _initialize, before the instance is known) goes to
// the plugin's logger.
func TestInitializeLogsToPlugin(t *testing.T) {
	_, logs := load(t, Options{Name: "30-init"})
	if want := `level=DEBUG msg="guest initialising" plugin=30-init stream=env.log`; !logs.contains(want) {
		t.Errorf("log lacks %q:\n%s", want, logs)
	}
}

// TestLongOutputTruncated: a 16 MiB output line and a 16 MiB env.log
// message are one record each, cut to 8 KiB, saying how long they were.
func TestLongOutputTruncated(t *testing.T) {
	p, logs := load(t, Options{Name: "30-big"})
	configure(t, p, "")
	if _, err := createContainer(t, p, 30*time.Second, "big-output"); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	const size = len("big line ") + 16<<20
	var stdout, envlog []string
	for _, line := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(line, "stream=stdout") && strings.Contains(line, "xxx"):
			stdout = append(stdout, line)
		case strings.Contains(line, "stream=env.log") && strings.Contains(line, "big message"):
			envlog = append(envlog, line)
		}
	}
	t.Logf("16 MiB stdout line: %d records; 16 MiB env.log message: %d records of %d bytes", len(stdout), len(envlog), len(strings.Join(envlog, "")))
	if len(stdout) != 1 || len(stdout[0]) > maxLine+256 || !strings.Contains(stdout[0], fmt.Sprintf("... (%d bytes)", size)) {
		t.Errorf("stdout: %d records, want one of at most 8 KiB saying the line was %d bytes", len(stdout), size)
	}
	size2 := len("big message ") + 16<<20
	if len(envlog) != 1 || len(envlog[0]) > maxLine+256 || !strings.Contains(envlog[0], fmt.Sprintf("... (%d bytes)", size2)) {
		t.Errorf("env.log: %d records, want one of at most 8 KiB saying the message was %d bytes", len(envlog), size2)
	}
}
