package adaptation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
)

// maxRecordBytes bounds the text of one record of the tests below: the
// message and every attribute (8 KiB each, and a note saying how long
// they were).
const maxRecordBytes = 8<<10 + 64

// checkRecordSizes fails the test for records whose message or an
// attribute is longer than maxRecordBytes.
func checkRecordSizes(t *testing.T, recs []logRecord) {
	t.Helper()
	for _, r := range recs {
		if len(r.msg) > maxRecordBytes {
			t.Errorf("record %q... has a message of %d bytes", r.msg[:32], len(r.msg))
		}
		for k, v := range r.attrs {
			if len(v) > maxRecordBytes {
				t.Errorf("record %q: attribute %s of %d bytes", r.msg, k, len(v))
			}
		}
	}
}

// suppressed sums the counts of the summaries of suppressed records
// matching pred.
func suppressed(recs []logRecord, pred func(logRecord) bool) int {
	n := 0
	for _, r := range recs {
		if r.msg == logsSuppressedMsg && pred(r) {
			c, _ := strconv.Atoi(r.attrs["suppressed"])
			n += c
		}
	}
	return n
}

// TestPluginOutputFlood: a launched plugin printing 200,000 lines and a
// 1 MiB one gets at most its burst and rate of log records, each at most
// 8 KiB, and the lines not logged are counted in a summary record.
func TestPluginOutputFlood(t *testing.T) {
	const lines = 200_000
	rt := newTestRuntime(t, []testPlugin{{"10-spam", helperArgs("stub", "-events", "CreateContainer", "-spam", strconv.Itoa(lines))}})
	start := time.Now()
	rt.start(t)
	isSpam := func(r logRecord) bool { return r.attrs["plugin"] == "10-spam" && strings.HasPrefix(r.msg, "SPAM") }
	ofSpam := func(r logRecord) bool { return r.attrs["plugin"] == "10-spam" }
	var recs []logRecord
	waitFor(t, "every line logged or counted as suppressed", func() bool {
		recs = rt.logs.find(isSpam)
		return len(recs)+suppressed(rt.logs.find(ofSpam), ofSpam) >= lines+1
	})
	took := time.Since(start)
	t.Logf("%d lines of output: %d log records within %v", lines+1, len(recs), took.Round(time.Millisecond))
	checkRecordSizes(t, recs)
	if bound := DefaultPluginLogBurst + int(DefaultPluginLogRate*took.Seconds()) + 1; len(recs) > bound {
		t.Errorf("%d records of output, want at most %d (burst and rate)", len(recs), bound)
	}
}

// waitFor polls cond until it holds (bounded by hangGuard).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOutOfScopeUpdatesLogged: one UpdateContainers request with as many
// updates as a request may hold, all of containers outside the plugin's
// scope, is one log record, with the count and the first few IDs.
func TestOutOfScopeUpdatesLogged(t *testing.T) {
	const n = MaxUpdatesPerMessage
	st := runtimetest.NewStore()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", st.List, st.Update, WithPluginDir(""), WithDisabledExternalConnections(),
		WithLogger(logs.logger()))
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	rtEnd, plEnd := net.Pipe()
	plugin, err := stub.New(&inScopeOnly{}, stub.WithConnection(plEnd), stub.WithPluginName("upd"), stub.WithPluginIdx("10"),
		stub.WithScope(gpuScope))
	must(t, err)
	go a.ServeConn(context.Background(), rtEnd)
	must(t, plugin.Start(ctxT(t)))
	t.Cleanup(plugin.Stop)

	updates := make([]*api.ContainerUpdate, n)
	for i := range updates {
		updates[i] = &api.ContainerUpdate{ContainerId: fmt.Sprintf("c%d", i)}
	}
	logs.wait(t, "the plugin synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" })
	before := len(logs.find(func(logRecord) bool { return true }))
	start := time.Now()
	failed, err := plugin.UpdateContainers(ctxT(t), updates, nil)
	took := time.Since(start)
	must(t, err)
	if len(failed) != n {
		t.Fatalf("%d updates failed, want all %d", len(failed), n)
	}
	recs := logs.find(func(logRecord) bool { return true })[before:]
	t.Logf("%d out-of-scope updates in one request: %d log records, answered in %v", n, len(recs), took.Round(time.Millisecond))
	checkRecordSizes(t, recs)
	var refusals []logRecord
	for _, r := range recs {
		if r.msg == "refusing plugin's updates of containers outside its scope" {
			refusals = append(refusals, r)
		}
	}
	if len(recs) > 2 || len(refusals) != 1 {
		t.Fatalf("%d records, %d refusals; want one refusal (and the request's)", len(recs), len(refusals))
	}
	if r := refusals[0]; r.attrs["refused"] != strconv.Itoa(n) || r.attrs["plugin"] != "10-upd" ||
		r.attrs["containers"] != "c0,c1,c2,c3,c4,..." {
		t.Errorf("refusal %v", r.attrs)
	}
}

// inScopeOnly is a plugin that does nothing.
type inScopeOnly struct{}

func (inScopeOnly) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return api.Event_CREATE_CONTAINER.Mask(), nil
}

func (inScopeOnly) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

// optOutMany answers CreateContainer with an opt-out of many objects the
// answer is not about.
type optOutMany struct {
	unimplementedPlugin
	ids []string
}

func (p *optOutMany) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.Event_CREATE_CONTAINER.Mask())}, nil
}

func (p *optOutMany) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}

func (p *optOutMany) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return &api.CreateContainerResponse{OptOut: &api.OptOut{PodIds: p.ids, ContainerIds: p.ids}}, nil
}

// TestIgnoredOptOutsLogged: an answer opting out of 100,000 objects it is
// not about is one record with the count and the first few.
func TestIgnoredOptOutsLogged(t *testing.T) {
	const n = 100_000
	p := &optOutMany{}
	for i := range n {
		p.ids = append(p.ids, fmt.Sprintf("x%d", i))
	}
	st := runtimetest.NewStore()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", st.List, st.Update, WithPluginDir(""), WithDisabledExternalConnections(),
		WithLogger(logs.logger()), WithBuiltinPlugin("10", "optout", p))
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	_, err = a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	must(t, err)
	recs := logs.find(func(r logRecord) bool {
		return r.msg == "plugin opted out of objects its answer is not about, ignoring them"
	})
	if len(recs) != 1 {
		t.Fatalf("%d records of ignored opt-outs, want 1", len(recs))
	}
	t.Logf("record of %d ignored opt-outs: %d bytes of IDs", 2*n, len(recs[0].attrs["ignored"]))
	checkRecordSizes(t, recs)
	if got, want := recs[0].attrs["ignored"], "pod x0,pod x1,pod x2,pod x3,pod x4,..."; got != want || recs[0].attrs["count"] != strconv.Itoa(2*n) {
		t.Errorf("ignored=%q count=%s, want %q and %d", got, recs[0].attrs["count"], want, 2*n)
	}
}

// TestConnectionLogFlood: connections refused, or closed before
// registering, are logged within the connection records' burst and rate,
// the others counted in a summary. Each connection is two records: its
// refusal (for the one held, its failed registration) and "external
// plugin not registered"; the wait counts them all, summaries written
// while the flood lasts included (a slow flood, on a busy machine, gets
// several).
func TestConnectionLogFlood(t *testing.T) {
	const (
		conns   = 2000
		perConn = 2
	)
	rt := newTestRuntime(t, nil, WithMaxPendingConnections(1))
	rt.start(t)
	hold, err := net.Dial("unix", rt.socket)
	must(t, err)
	defer hold.Close()
	waitFor(t, "the held connection counted as not registered", func() bool { return rt.a.unregisteredCount() == 1 })
	start := time.Now()
	for range conns {
		c, err := net.Dial("unix", rt.socket)
		must(t, err)
		c.Close()
	}
	hold.Close()
	isConn := func(r logRecord) bool {
		return strings.HasPrefix(r.msg, "refusing plugin connection") || r.msg == "plugin registration failed" ||
			r.msg == "external plugin not registered"
	}
	ofConns := func(r logRecord) bool { return r.attrs["source"] == "plugin connections" }
	const want = perConn * (conns + 1)
	var recs []logRecord
	waitFor(t, "every connection's records logged or counted as suppressed", func() bool {
		all := rt.logs.find(func(logRecord) bool { return true })
		recs = rt.logs.find(isConn)
		return len(recs)+suppressed(all, ofConns)+rt.a.connLogs.pending() >= want
	})
	took := time.Since(start)
	t.Logf("%d refused connections: %d log records within %v", conns, len(recs), took.Round(time.Millisecond))
	if bound := DefaultPluginLogBurst + int(DefaultPluginLogRate*took.Seconds()) + 1; len(recs) > bound {
		t.Errorf("%d records about connections, want at most %d", len(recs), bound)
	}
	must(t, rt.a.Stop(ctxT(t)))
	all := rt.logs.find(func(logRecord) bool { return true })
	if n := suppressed(all, ofConns); n+len(recs) != want {
		t.Errorf("%d records logged and %d counted as suppressed after Stop, want %d in all", len(recs), n, want)
	}
}

// pending returns the number of records suppressed and not yet
// summarized.
func (b *logBudget) pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.suppressed
}

// TestBoundedRecords: the runtime's logger cuts every message, string
// attribute and error (also in groups and in attributes given to With)
// to 8 KiB, saying how long it was; short records pass unchanged.
func TestBoundedRecords(t *testing.T) {
	logs := newLogSink(t)
	log := slog.New(boundedHandler{h: logs.logger().Handler()})
	long := strings.Repeat("é", 10<<10) // 20 KiB, cut on a character boundary
	log.With("with", long).Info(long, "s", long, "err", errors.New(long), "n", 42,
		slog.Group("g", slog.String("inner", long), slog.Int("k", 1)))
	log.Info("short", "s", "value")
	recs := logs.find(func(logRecord) bool { return true })
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	want := strings.Repeat("é", 4<<10) + "... (20480 bytes)"
	for k, v := range map[string]string{"message": r.msg, "with": r.attrs["with"], "s": r.attrs["s"], "err": r.attrs["err"]} {
		if v != want {
			t.Errorf("%s: %d bytes ending %q, want %d bytes", k, len(v), v[len(v)-20:], len(want))
		}
	}
	if g := r.attrs["g"]; len(g) > maxRecordBytes || !strings.Contains(g, "... (20480 bytes)") || !strings.Contains(g, "k=1") {
		t.Errorf("group of %d bytes: %.40q...", len(g), g)
	}
	if r.attrs["n"] != "42" {
		t.Errorf("n=%s", r.attrs["n"])
	}
	if r := recs[1]; r.msg != "short" || r.attrs["s"] != "value" {
		t.Errorf("short record %q %v", r.msg, r.attrs)
	}
}

// TestLogBudget: a budget lets its burst through, suppresses the rest,
// refills at its rate, and reports what it suppressed before the next
// record that passes and when flushed.
func TestLogBudget(t *testing.T) {
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", runtimetest.NewStore().List, runtimetest.NewStore().Update,
		WithLogger(logs.logger()), WithPluginLogLimit(10, 5))
	must(t, err)
	b := a.pluginLogBudget("10-p")
	log := b.logger(a.log.Handler()).With("plugin", "10-p")
	start := time.Now()
	for i := range 20 {
		log.Info("record", "i", i)
	}
	got := len(logs.find(func(r logRecord) bool { return r.msg == "record" }))
	if bound := 5 + int(10*time.Since(start).Seconds()); got < 5 || got > bound {
		t.Errorf("%d of 20 records at once passed, want the burst of 5 (and at most %d)", got, bound)
	}
	time.Sleep(150 * time.Millisecond) // at 10/s: at least one token
	log.Info("later")
	recs := logs.find(func(logRecord) bool { return true })
	if n := len(recs); n < 2 || recs[n-2].msg != logsSuppressedMsg || recs[n-2].attrs["suppressed"] != strconv.Itoa(20-got) ||
		recs[n-2].attrs["plugin"] != "10-p" || recs[n-1].msg != "later" {
		t.Fatalf("after a pause: %v", recs)
	}
	log.Info("suppressed?") // a token may have come back meanwhile
	for range 10 {
		log.Info("suppressed")
	}
	passed := len(logs.find(func(r logRecord) bool { return strings.HasPrefix(r.msg, "suppressed") }))
	b.flush()
	last := logs.find(func(logRecord) bool { return true })
	if r := last[len(last)-1]; r.msg != logsSuppressedMsg {
		t.Errorf("flush wrote %q %v, want a summary", r.msg, r.attrs)
	}
	if n := suppressed(last[len(recs):], func(logRecord) bool { return true }); n != 11-passed {
		t.Errorf("%d of 11 records passed, %d reported suppressed", passed, n)
	}
	b.flush()
	if n := len(logs.find(func(logRecord) bool { return true })); n != len(last) {
		t.Errorf("a second flush wrote %d records", n-len(last))
	}
	for _, bad := range []struct {
		rate  float64
		burst int
	}{{0, 1}, {-1, 1}, {1, 0}} {
		if _, err := New("r", "v", runtimetest.NewStore().List, runtimetest.NewStore().Update, WithPluginLogLimit(bad.rate, bad.burst)); err == nil {
			t.Errorf("WithPluginLogLimit(%v, %d) accepted", bad.rate, bad.burst)
		}
	}
}

// TestWASMPluginLogsLimited: what a WASM plugin writes and logs is within
// its budget, and what is suppressed is reported once it is gone.
func TestWASMPluginLogsLimited(t *testing.T) {
	rt := newTestRuntime(t, nil, append(wasmOptions(t, 30*time.Second), WithPluginLogLimit(0.001, 2))...)
	installWASM(t, rt, "10-wasm")
	rt.start(t)
	for i := range 3 {
		if _, _, err := createNamed(t, rt.a, i, "print"); err != nil {
			t.Fatal(err)
		}
	}
	must(t, rt.a.Stop(ctxT(t)))
	ofPlugin := func(r logRecord) bool { return r.attrs["plugin"] == "10-wasm" }
	output := rt.logs.find(func(r logRecord) bool { return ofPlugin(r) && r.attrs["stream"] != "" })
	if len(output) > 2 {
		t.Errorf("%d records of output, want at most the burst of 2: %v", len(output), output)
	}
	if n := suppressed(rt.logs.find(ofPlugin), ofPlugin); n+len(output) < 9 {
		t.Errorf("%d records of output and %d suppressed, want at least the 9 lines printed", len(output), n)
	}
}

// TestExternalLogBudgets: an external plugin keeps its log budget across
// registrations, so reconnecting does not refill it; names beyond the
// bound share one budget.
func TestExternalLogBudgets(t *testing.T) {
	st := runtimetest.NewStore()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", st.List, st.Update, WithPluginDir(""), WithDisabledExternalConnections(),
		WithLogger(logs.logger()), WithPluginLogLimit(0.001, 1))
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	for i := range 2 {
		served := connectInProcess(t, a, &inScopeOnly{}, stub.WithPluginName("ext"), stub.WithPluginIdx("20"))
		waitState(t, a, "20-ext", StateActive)
		a.mu.Lock()
		p := a.findLocked("20-ext")
		a.mu.Unlock()
		p.log.Info("request record", "round", i)
		p.disconnect("test")
		if err := <-served; err != nil {
			t.Fatalf("ServeConn: %v", err)
		}
		waitFor(t, "the plugin gone", func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.findLocked("20-ext") == nil
		})
	}
	if n := len(logs.find(func(r logRecord) bool { return r.msg == "request record" })); n != 1 {
		t.Errorf("%d records with a burst of 1 over two registrations, want 1", n)
	}
	first := a.externalLogBudget("20-ext")
	for i := range maxExternalLogBudgets {
		a.externalLogBudget(fmt.Sprintf("30-n%d", i))
	}
	if a.externalLogBudget("20-ext") != first {
		t.Error("a known name got another budget")
	}
	if x, y := a.externalLogBudget("40-x"), a.externalLogBudget("40-y"); x != y || x == first {
		t.Error("names beyond the bound do not share one budget")
	}
}
