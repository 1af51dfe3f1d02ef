package stub

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// DefaultSyncGCPercent is the garbage collector's target percentage (see
// [debug.SetGCPercent]) suggested for [WithSyncGCPercent]: the stub
// applies it while it receives a large Synchronize request, from the
// first part of a request the runtime split (more=true, which it does past a few megabytes) until
// the last part is decoded, before the plugin's Synchronize handler runs,
// or until the connection ends; a snapshot sent in one part leaves the
// collector alone, so small nodes see no change in memory use.
//
// Decoding the snapshot of a node is the largest allocation burst of a
// plugin's life, and everything it allocates stays alive: with the
// default GOGC of 100 the collector runs again and again over a heap that
// only grows, and a plugin process with one P (see [TuneProcess]) does
// that work on the same core as the decoding. At 400, decoding the
// snapshot of 10,000 containers (24 MB) took about a third less time in
// docs/benchmarks.md's measurements, for a few more megabytes of peak heap
// (at most four times the live heap gained during the burst, and in
// practice far less: most of it is the snapshot itself).
const DefaultSyncGCPercent = 400

// WithSyncGCPercent makes the stub apply the GC percentage n while it
// receives a split Synchronize request (see [DefaultSyncGCPercent]); 0,
// the default, leaves the garbage collector alone. The setting is the
// process's, changed for the time of the request: a plugin's own binary
// may ask for it, a program that hosts a stub beside other work should
// not. n must not be negative: turning the collector off is not allowed,
// since a snapshot can be large. Stubs made with [NewBuiltin] never
// change the GC setting.
func WithSyncGCPercent(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("stub: WithSyncGCPercent: invalid value %d", n)
		}
		c.syncGC = n
		return nil
	}
}

// syncGC applies and restores the GC percentage of a Synchronize. Its
// zero value does nothing.
type syncGC struct {
	percent int // 0: leave the GC alone

	mu      sync.Mutex
	applied bool
	prev    int
}

// begin applies the percentage, unless it is applied already.
func (g *syncGC) begin() {
	if g == nil || g.percent <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.applied {
		g.prev = debug.SetGCPercent(g.percent)
		g.applied = true
	}
}

// end restores the setting begin replaced, if it did.
func (g *syncGC) end() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.applied {
		debug.SetGCPercent(g.prev)
		g.applied = false
	}
}
