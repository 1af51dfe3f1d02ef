package stub

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestWithSyncGCPercentRejectsNegative(t *testing.T) {
	cfg := defaultConfig()
	if err := WithSyncGCPercent(-1)(&cfg); err == nil {
		t.Error("WithSyncGCPercent(-1) accepted")
	}
}

// gcPercent returns the current GC percentage.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// syncer implements Synchronize only.
type syncer struct{}

func (syncer) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (syncer) RemovePodSandbox(context.Context, *api.PodSandbox) error { return nil }

// TestSyncGCAppliedWhileSynchronizing checks that the collector's setting
// holds from the first part of a split Synchronize until the last part
// arrives, and is restored then (or by end, when the connection ends
// first).
func TestSyncGCAppliedWhileSynchronizing(t *testing.T) {
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)

	c, err := newCore(syncer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(c)
	d.gc = &syncGC{percent: 400}
	add := func(more bool) bool {
		t.Helper()
		rsp, err := d.Synchronize(context.Background(), &api.SynchronizeRequest{More: more})
		if err != nil {
			t.Fatal(err)
		}
		return !rsp.GetMore()
	}
	// A request in one part leaves the collector alone.
	if last := add(false); !last {
		t.Fatal("a part with more=false was not taken for the last")
	}
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after a one-part Synchronize, want 123 untouched", got)
	}
	if last := add(true); last {
		t.Fatal("a part with more=true was taken for the last")
	}
	if got := gcPercent(); got != 400 {
		t.Fatalf("GC percent %d between parts, want 400", got)
	}
	add(true) // a second part does not stack
	if got := gcPercent(); got != 400 {
		t.Fatalf("GC percent %d between parts, want 400", got)
	}
	add(false)
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after the last part, want the previous 123", got)
	}
	d.gc.end() // idempotent
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after a second end, want 123", got)
	}

	// The connection ends before the last part.
	add(true)
	d.gc.end()
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after the connection ended, want 123", got)
	}

	// Zero percent and builtins (no syncGC) leave the setting alone.
	off := newDispatcher(c)
	off.gc = &syncGC{}
	if _, err := off.Synchronize(context.Background(), &api.SynchronizeRequest{More: true}); err != nil {
		t.Fatal(err)
	}
	builtin := newDispatcher(c)
	if _, err := builtin.Synchronize(context.Background(), &api.SynchronizeRequest{More: true}); err != nil {
		t.Fatal(err)
	}
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d, want 123 untouched", got)
	}
}
