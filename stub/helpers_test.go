package stub_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout guards against hangs only.
const testTimeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// logRecorder is a slog.Handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{} // closed and replaced on every record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// waitFor waits until find returns a record, or the test times out.
func (l *logRecorder) waitFor(t *testing.T, level slog.Level, msg string) []map[string]string {
	t.Helper()
	ctx := testContext(t)
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if recs := l.find(level, msg); len(recs) > 0 {
			return recs
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no %v log record %q", level, msg)
		}
	}
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// find returns the records at level whose message contains msg, with
// their attributes as strings.
func (l *logRecorder) find(level slog.Level, msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.records {
		if r.Level != level || !strings.Contains(r.Message, msg) {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

func recorder() (*logRecorder, stub.Option) {
	l := &logRecorder{changed: make(chan struct{})}
	return l, stub.WithLogger(slog.New(l))
}

func pod(id string) *api.PodSandbox {
	return &api.PodSandbox{Id: id, Name: "pod-" + id, Namespace: "default", Uid: "uid-" + id}
}

func ctr(id, podID string) *api.Container {
	return &api.Container{Id: id, PodSandboxId: podID, Name: "ctr-" + id}
}

// startStub creates a stub connected to rt and starts it.
func startStub(t *testing.T, rt *stubtest.Runtime, plugin any, opts ...stub.Option) (*stub.Stub, *stubtest.Plugin) {
	t.Helper()
	conn, err := rt.Connect()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]stub.Option{stub.WithPluginIdx("10"), stub.WithPluginName("test"), stub.WithConnection(conn)}, opts...)
	s, err := stub.New(plugin, all...)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	ctx := testContext(t)
	p, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := p.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	return s, p
}

// newStub creates a stub connected to rt without starting it.
func newStub(t *testing.T, rt *stubtest.Runtime, plugin any, opts ...stub.Option) (*stub.Stub, *stubtest.Plugin) {
	t.Helper()
	conn, err := rt.Connect()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]stub.Option{stub.WithPluginIdx("10"), stub.WithPluginName("test"), stub.WithConnection(conn)}, opts...)
	s, err := stub.New(plugin, all...)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	p, err := rt.NextPlugin(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// creator is a plugin handling only CreateContainer, with a settable
// function.
type creator struct {
	fn func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
}

func (c *creator) CreateContainer(ctx context.Context, p *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if c.fn == nil {
		return &api.ContainerAdjustment{Annotations: map[string]string{"seen": ctr.GetId()}}, nil, nil
	}
	return c.fn(ctx, p, ctr)
}

func mustMask(t *testing.T, events ...string) api.EventMask {
	t.Helper()
	m, err := api.ParseEventMask(events...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sprintIDs[T interface{ GetId() string }](objs []T) string {
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.GetId()
	}
	return fmt.Sprint(ids)
}
