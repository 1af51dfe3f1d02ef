package chaos

// The runtime side of the suite: an Adaptation embedded in the test
// process with an in-memory store and a capturing logger, and the leak
// and memory measurements. Plugin processes are in process_test.go.

import (
	"context"
	"fmt"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/log"
	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"go.uber.org/goleak"
)

const (
	// helperEnv marks a re-executed test binary as a plugin.
	helperEnv = "NRIKIT_CHAOS_PLUGIN"
	// noRaceExitDelay stops race-enabled plugin processes from sleeping
	// a second at exit.
	noRaceExitDelay = "GORACE=atexit_sleep_ms=0"
)

// factor stretches every time bound of the tests to the machine's load
// when the test binary starts (internal/testing/testscale: 1 on a quiet machine);
// the bounds below are set once from it and never changed.
var factor = testscale.Factor()

// scaled returns d stretched by factor.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }

var (
	// hangGuard bounds every wait that has no bound of its own; it only
	// fires when something hangs.
	hangGuard = scaled(30 * time.Second)
	// requestTimeout is the runtime's request timeout in every test.
	requestTimeout = scaled(500 * time.Millisecond)
	// registrationTimeout is the runtime's registration timeout, unless
	// a test sets its own.
	registrationTimeout = scaled(2 * time.Second)
	// slack is added to every bound derived from a timeout: scheduling
	// on a loaded 2-core machine under the race detector.
	slack = scaled(500 * time.Millisecond)
)

// logRecord is one record the runtime logged.
type logRecord struct {
	at    time.Time
	level slog.Level
	msg   string
	attrs map[string]string
}

// String renders the record for failure messages.
func (r logRecord) String() string {
	keys := make([]string, 0, len(r.attrs))
	for k := range r.attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", r.level, r.msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, r.attrs[k])
	}
	return b.String()
}

// logSink keeps the runtime's log records, and their total size, for the
// tests to inspect and wait on.
type logSink struct {
	mu      sync.Mutex
	recs    []logRecord
	size    int // bytes of messages, keys and values
	changed chan struct{}
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

// sinkHandler is the slog.Handler writing to a logSink.
type sinkHandler struct {
	s     *logSink
	attrs []slog.Attr
}

func (h *sinkHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sinkHandler{s: h.s, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *sinkHandler) WithGroup(string) slog.Handler { return h }

func (h *sinkHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{at: time.Now(), level: r.Level, msg: r.Message, attrs: map[string]string{}}
	size := len(r.Message)
	add := func(a slog.Attr) bool {
		v := a.Value.String()
		rec.attrs[a.Key] = v
		size += len(a.Key) + len(v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.s.recs = append(h.s.recs, rec)
	h.s.size += size
	close(h.s.changed)
	h.s.changed = make(chan struct{})
	return nil
}

func (s *logSink) logger() *slog.Logger { return slog.New(&sinkHandler{s: s}) }

// bytes returns the size of everything logged so far.
func (s *logSink) bytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// find returns the records matching pred.
func (s *logSink) find(pred func(logRecord) bool) []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logRecord
	for _, r := range s.recs {
		if pred(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitN waits until n records match pred, at most timeout, and returns
// them.
func (s *logSink) waitN(t testing.TB, n int, timeout time.Duration, what string, pred func(logRecord) bool) []logRecord {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if out := s.find(pred); len(out) >= n {
			return out
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("runtime log: no %d× %s within %v (have %d)", n, what, timeout, len(s.find(pred)))
		}
	}
}

// wait waits at most timeout for a record matching pred.
func (s *logSink) wait(t testing.TB, timeout time.Duration, what string, pred func(logRecord) bool) logRecord {
	t.Helper()
	return s.waitN(t, 1, timeout, what, pred)[0]
}

// dump logs the last n records.
func (s *logSink) dump(t testing.TB, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.recs[max(0, len(s.recs)-n):]
	t.Logf("runtime log: last %d of %d records:", len(recs), len(s.recs))
	for _, r := range recs {
		t.Logf("  %s %s", r.at.Format("15:04:05.000"), r)
	}
}

// about matches the records of plugin with message msg.
func about(plugin, msg string) func(logRecord) bool {
	return func(r logRecord) bool { return r.attrs["plugin"] == plugin && r.msg == msg }
}

// add puts pod and ctr (if not nil) into the fake runtime's store.
func add(s *runtimetest.Store, pod *api.PodSandbox, ctr *api.Container) {
	s.AddPod(pod)
	if ctr != nil {
		s.AddCtr(ctr)
	}
}

// fill adds pods and containers of about size encoded bytes in total to
// s: a large Synchronize snapshot.
func fill(s *runtimetest.Store, size int) {
	const pods, envPerCtr, envBytes = 10, 4, 1000
	for i := range pods {
		s.AddPod(testPod("snap", fmt.Sprintf("snap-pod%d", i)))
	}
	n := size / (envPerCtr * (envBytes + 16))
	for i := range n {
		s.AddCtr(testCtr(fmt.Sprintf("snap-pod%d", i%pods), fmt.Sprintf("snap-ctr%d", i), envPerCtr, envBytes))
	}
}

// testPod returns a pod in namespace ns.
func testPod(ns, id string) *api.PodSandbox {
	return &api.PodSandbox{Id: id, Name: id, Namespace: ns, Uid: "uid-" + id}
}

// testCtr returns a container of pod with env variables of envBytes
// bytes each.
func testCtr(pod, id string, env, envBytes int) *api.Container {
	c := &api.Container{Id: id, PodSandboxId: pod, Name: id, Args: []string{"/bin/sh"}}
	for i := range env {
		c.Env = append(c.Env, fmt.Sprintf("E%d=%s", i, strings.Repeat("x", envBytes)))
	}
	return c
}

// testRuntime is an Adaptation listening on a socket in a temporary
// directory, with its store and captured log.
type testRuntime struct {
	a      *adaptation.Adaptation
	logs   *logSink
	store  *runtimetest.Store
	socket string
}

// startRuntime creates and starts a runtime with the suite's defaults
// and opts (which take precedence); it is stopped at cleanup.
func startRuntime(t testing.TB, opts ...adaptation.Option) *testRuntime {
	t.Helper()
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rt := &testRuntime{logs: newLogSink(), store: runtimetest.NewStore(), socket: filepath.Join(dir, "nri.sock")}
	base := []adaptation.Option{
		adaptation.WithSocketPath(rt.socket), adaptation.WithPluginDir(""),
		adaptation.WithLogger(rt.logs.logger()),
		adaptation.WithRequestTimeout(requestTimeout),
		adaptation.WithRegistrationTimeout(registrationTimeout),
	}
	a, err := adaptation.New("chaos-runtime", "v0.0.1", rt.store.List, rt.store.Update, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rt.a = a
	ttrpcMark := runtimeTTRPC.mark()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			rt.logs.dump(t, 150)
			for _, e := range runtimeTTRPC.since(ttrpcMark) {
				t.Logf("ttrpc in the runtime's process: %s", e)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return rt
}

// create adds pod and ctr to the store and calls CreateContainer,
// reporting how long it took.
func (rt *testRuntime) create(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.CreateContainerResponse, time.Duration, error) {
	add(rt.store, pod, ctr)
	start := time.Now()
	rsp, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	return rsp, time.Since(start), err
}

// plugin returns the info of the plugin full, if registered.
func (rt *testRuntime) plugin(full string) (adaptation.PluginInfo, bool) {
	for _, p := range rt.a.Plugins() {
		if p.FullName() == full {
			return p, true
		}
	}
	return adaptation.PluginInfo{}, false
}

// waitState waits until plugin full is registered in state, polling
// every millisecond, and returns when it saw it.
func (rt *testRuntime) waitState(t testing.TB, full string, state adaptation.PluginState, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if p, ok := rt.plugin(full); ok && p.State == state {
			return time.Now()
		}
		if time.Now().After(deadline) {
			p, ok := rt.plugin(full)
			t.Fatalf("plugin %s not %s within %v (registered: %v, state %s)", full, state, timeout, ok, p.State)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitGone waits at most timeout for plugin full to be disconnected and
// returns the log record saying so.
func (rt *testRuntime) waitGone(t testing.TB, full string, timeout time.Duration) logRecord {
	t.Helper()
	rec := rt.logs.wait(t, timeout, "disconnect of "+full, about(full, "plugin disconnected"))
	if _, ok := rt.plugin(full); ok {
		t.Fatalf("plugin %s still registered after it was disconnected", full)
	}
	return rec
}

// envOf returns the environment variables an adjustment sets, by key.
func envOf(rsp *api.CreateContainerResponse) map[string]string {
	env := map[string]string{}
	for _, kv := range rsp.GetAdjust().GetEnv() {
		env[kv.GetKey()] = kv.GetValue()
	}
	return env
}

// countFDs returns the number of open file descriptors of the process.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// eventually polls cond every 10 ms until it holds or timeout passed, and
// reports whether it held.
func eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// baseline is the goroutines and file descriptors of the process at one
// moment, for checking that they return to it.
type baseline struct {
	goroutines, fds int
}

func takeBaseline(t testing.TB) baseline {
	return baseline{goroutines: runtime.NumGoroutine(), fds: countFDs(t)}
}

// await waits until the goroutines and file descriptors are back to b
// (or fewer), failing the test after timeout.
func (b baseline) await(t testing.TB, what string, timeout time.Duration) {
	t.Helper()
	var g, f int
	if !eventually(timeout, func() bool {
		g, f = runtime.NumGoroutine(), countFDs(t)
		return g <= b.goroutines && f <= b.fds
	}) {
		t.Errorf("%s: goroutines %d (baseline %d), fds %d (baseline %d) after %v",
			what, g, b.goroutines, f, b.fds, timeout)
	}
}

// checkLeaks makes the test fail unless, once everything it started is
// cleaned up, no goroutine it started is left and the open file
// descriptors are back to their number at the start. Call it first, so
// that its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	fds := countFDs(t)
	t.Cleanup(func() {
		// Goroutines of a test may still be ending on a busy machine:
		// give them time before calling what is left a leak.
		eventually(scaled(10*time.Second), func() bool { return goleak.Find(ignore) == nil })
		goleak.VerifyNone(t, ignore)
		var now int
		if !eventually(scaled(10*time.Second), func() bool { now = countFDs(t); return now <= fds }) {
			t.Errorf("open file descriptors: %d at the end, %d at the start", now, fds)
		}
	})
}

// heapAfterGC returns the live heap after a garbage collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// within fails the test unless d is at most bound.
func within(t testing.TB, what string, d, bound time.Duration) {
	t.Helper()
	if d > bound {
		t.Errorf("%s took %v, above its bound of %v", what, d, bound)
	} else {
		t.Logf("%s took %v (bound %v)", what, d, bound)
	}
}

// ttrpcErrors collects the errors logged in the test process through
// containerd/log, which is where ttrpc logs (not to the Adaptation's
// logger): the runtime side's "failed sending message on channel" and
// the like. TestMain installs it.
type ttrpcErrors struct {
	mu      sync.Mutex
	entries []string
}

// runtimeTTRPC is the test process's collector.
var runtimeTTRPC = &ttrpcErrors{}

func (h *ttrpcErrors) Levels() []log.Level {
	return []log.Level{log.ErrorLevel, log.FatalLevel, log.PanicLevel}
}

func (h *ttrpcErrors) Fire(e *log.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, fmt.Sprintf("%s %v", e.Message, e.Data))
	return nil
}

// mark returns the number of errors so far, for since.
func (h *ttrpcErrors) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// since returns the errors logged after mark.
func (h *ttrpcErrors) since(mark int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.entries[mark:])
}
