package stub

import (
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

// TestSyncGCAppliedWhileSynchronizing checks that the collector's setting
// holds from the first part of a split Synchronize until the last part
// arrives, and is restored then (or by end, when the connection ends
// first).
func TestSyncGCAppliedWhileSynchronizing(t *testing.T) {
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)

	c := syncCollector{gc: &syncGC{percent: 400}}
	// A request in one part leaves the collector alone.
	if _, _, last := c.add(&api.SynchronizeRequest{}); !last {
		t.Fatal("a part with more=false was not taken for the last")
	}
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after a one-part Synchronize, want 123 untouched", got)
	}
	if _, _, last := c.add(&api.SynchronizeRequest{More: true}); last {
		t.Fatal("a part with more=true was taken for the last")
	}
	if got := gcPercent(); got != 400 {
		t.Fatalf("GC percent %d between parts, want 400", got)
	}
	c.add(&api.SynchronizeRequest{More: true}) // a second part does not stack
	if got := gcPercent(); got != 400 {
		t.Fatalf("GC percent %d between parts, want 400", got)
	}
	c.add(&api.SynchronizeRequest{})
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after the last part, want the previous 123", got)
	}
	c.gc.end() // idempotent
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after a second end, want 123", got)
	}

	// The connection ends before the last part.
	c.add(&api.SynchronizeRequest{More: true})
	c.gc.end()
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d after the connection ended, want 123", got)
	}

	// Zero percent and builtins (no syncGC) leave the setting alone.
	off := syncCollector{gc: &syncGC{}}
	off.gc.begin()
	var builtin syncCollector
	builtin.gc.begin()
	if got := gcPercent(); got != 123 {
		t.Fatalf("GC percent %d, want 123 untouched", got)
	}
}
