package adaptation

import (
	"context"
	"fmt"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/pluginproc"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { cleanupWASM() }))
}

// noRaceExitDelay stops race-enabled plugin processes from sleeping a
// second at exit.
const noRaceExitDelay = "GORACE=atexit_sleep_ms=0"

// factor stretches the time bounds of the tests to the machine's load when
// the test binary starts (internal/testing/testscale: 1 on a quiet machine).
var factor = testscale.Factor()

// scaled returns d stretched by factor: a bound of a test that holds on a
// quiet machine, for this one.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }

// hangGuard bounds every wait in the tests; it only fires on a hang.
var hangGuard = scaled(60 * time.Second)

// logRecord is one captured log record.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logSink is a slog.Handler that keeps records for the tests to wait on.
type logSink struct {
	mu      sync.Mutex
	recs    []logRecord
	changed chan struct{}
	t       testing.TB
}

func newLogSink(t testing.TB) *logSink { return &logSink{changed: make(chan struct{}), t: t} }

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
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { rec.attrs[a.Key] = a.Value.String(); return true })
	h.s.add(rec)
	return nil
}

func (s *logSink) add(rec logRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, rec)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *logSink) logger() *slog.Logger { return slog.New(&sinkHandler{s: s}) }

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

// waitN waits until n records match pred and returns them.
func (s *logSink) waitN(t testing.TB, n int, what string, pred func(logRecord) bool) []logRecord {
	t.Helper()
	deadline := time.NewTimer(hangGuard)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		var out []logRecord
		for _, r := range s.recs {
			if pred(r) {
				out = append(out, r)
			}
		}
		s.mu.Unlock()
		if len(out) >= n {
			return out
		}
		select {
		case <-changed:
		case <-deadline.C:
			s.dump(t)
			t.Fatalf("timed out waiting for %d× %s (have %d)", n, what, len(out))
		}
	}
}

// wait waits for one record matching pred.
func (s *logSink) wait(t testing.TB, what string, pred func(logRecord) bool) logRecord {
	t.Helper()
	return s.waitN(t, 1, what, pred)[0]
}

// output matches the output lines of plugin starting with prefix.
func output(plugin, prefix string) func(logRecord) bool {
	return func(r logRecord) bool {
		return r.attrs["plugin"] == plugin && r.attrs["stream"] != "" && strings.HasPrefix(r.msg, prefix)
	}
}

// lines returns the output lines of plugin starting with prefix.
func (s *logSink) lines(plugin, prefix string) []string {
	var out []string
	for _, r := range s.find(output(plugin, prefix)) {
		out = append(out, r.msg)
	}
	return out
}

func (s *logSink) dump(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		t.Logf("log: %s %q %v", r.level, r.msg, r.attrs)
	}
}

// testPlugin is a pre-installed plugin for a test runtime.
type testPlugin struct {
	full string
	args []string // helperArgs(...)
}

// testRuntime is an Adaptation with a fake runtime around it.
type testRuntime struct {
	a      *Adaptation
	logs   *logSink
	store  *runtimetest.Store
	dir    string // plugin directory
	conf   string // configuration directory
	socket string
}

// shortTempDir returns a temporary directory short enough for unix socket
// paths.
func shortTempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// newTestRuntime installs plugins (links to the test binary) and creates
// an Adaptation for them with opts; it is stopped at cleanup.
func newTestRuntime(t testing.TB, plugins []testPlugin, opts ...Option) *testRuntime {
	t.Helper()
	root := shortTempDir(t)
	rt := &testRuntime{
		logs:   newLogSink(t),
		store:  runtimetest.NewStore(),
		dir:    filepath.Join(root, "plugins"),
		conf:   filepath.Join(root, "conf"),
		socket: filepath.Join(root, "run", "nri.sock"),
	}
	for _, d := range []string{rt.dir, rt.conf} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := []Option{
		WithPluginDir(rt.dir), WithConfigDir(rt.conf), WithSocketPath(rt.socket),
		WithLogger(rt.logs.logger()), WithPluginEnv(helperEnv+"=1", noRaceExitDelay),
		WithRegistrationTimeout(10 * time.Second), WithRequestTimeout(10 * time.Second),
		WithTerminationGrace(5 * time.Second),
	}
	for _, p := range plugins {
		if err := os.Symlink(exe, filepath.Join(rt.dir, p.full)); err != nil {
			t.Fatal(err)
		}
		base = append(base, WithPluginArgs(p.full, p.args...))
	}
	a, err := New("test-runtime", "v1.0.0", rt.store.List, rt.store.Update, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rt.a = a
	stopAtCleanup(t, a, rt.logs)
	return rt
}

// stopAtCleanup stops a when the test ends (bounded by hangGuard) and
// then, if the test failed, prints the log.
func stopAtCleanup(t testing.TB, a *Adaptation, logs *logSink) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			logs.dump(t)
		}
	})
}

func (rt *testRuntime) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := rt.a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// plugin returns the info of the plugin full, if registered.
func (rt *testRuntime) plugin(full string) (PluginInfo, bool) {
	for _, p := range rt.a.Plugins() {
		if p.FullName() == full {
			return p, true
		}
	}
	return PluginInfo{}, false
}

// waitGone waits until plugin full is no longer registered.
func (rt *testRuntime) waitGone(t testing.TB, full string) {
	t.Helper()
	rt.logs.wait(t, "disconnect of "+full, func(r logRecord) bool {
		return r.msg == "plugin disconnected" && r.attrs["plugin"] == full
	})
	if _, ok := rt.plugin(full); ok {
		t.Fatalf("plugin %s still registered after disconnect", full)
	}
}

// external is a plugin process the test started itself, connecting to
// the socket; its output goes to the runtime's log sink as if captured.
type external struct{ proc *pluginproc.Process }

func startExternal(t testing.TB, logs *logSink, label string, args []string) *external {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startExternalFrom(t, logs, label, exe, args)
}

// startExternalFrom is startExternal of the executable exe (a copy of the
// test binary).
func startExternalFrom(t testing.TB, logs *logSink, label, exe string, args []string) *external {
	t.Helper()
	proc, _, err := pluginproc.Start(pluginproc.Spec{Path: exe, Args: args, External: true,
		Env: []string{helperEnv + "=1", noRaceExitDelay},
		Lines: func(stream string, line []byte) {
			if stream == "stderr" {
				fmt.Fprintf(os.Stderr, "%s\n", line)
				return
			}
			logs.add(logRecord{level: slog.LevelInfo, msg: string(line),
				attrs: map[string]string{"plugin": label, "stream": stream}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	e := &external{proc: proc}
	t.Cleanup(func() { e.kill() })
	return e
}

func (e *external) kill() { e.proc.Kill() }

// wait waits for the process to exit on its own.
func (e *external) wait(t testing.TB) {
	t.Helper()
	if !e.proc.WaitExit(hangGuard, nil) {
		t.Fatal("external plugin did not exit")
	}
	<-e.proc.Done()
}

func testPod(i int) *api.PodSandbox {
	return &api.PodSandbox{Id: fmt.Sprintf("pod%d", i), Name: fmt.Sprintf("pod-%d", i), Namespace: "default",
		Uid: fmt.Sprintf("uid-%d", i)}
}

func testCtr(pod, i int) *api.Container {
	return &api.Container{Id: fmt.Sprintf("ctr%d", i), PodSandboxId: fmt.Sprintf("pod%d", pod),
		Name: fmt.Sprintf("ctr-%d", i), Env: []string{"BASE=1"}, Args: []string{"/bin/sh"}}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}
