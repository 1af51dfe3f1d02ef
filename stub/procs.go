package stub

import (
	"fmt"
	"os"
	"runtime"
)

// DefaultMaxProcs is the GOMAXPROCS [TuneProcess] sets.
const DefaultMaxProcs = 1

// TuneProcess adapts the Go runtime to a plugin process: it sets
// GOMAXPROCS to [DefaultMaxProcs], unless the GOMAXPROCS environment
// variable is set, and returns the previous setting. A stub never changes
// process-wide settings by itself: call TuneProcess first thing in the
// main function of a plugin's own binary (the template and the sample
// plugins do), not in a program that hosts a stub beside other work. For
// the garbage collector during large Synchronize requests, see
// [WithSyncGCPercent].
//
// The trade-off. A plugin process spends nearly all its time waiting for
// the runtime, which sends it one request at a time. With more than one
// P, every request wakes further OS threads that spin looking for work
// while the request moves from the connection's reader to the handler and
// back; on a node with many plugins and few cores those spinning threads
// take the CPU from the runtime and from the plugin being called. One P
// makes each hand-off a plain goroutine switch: in docs/benchmarks.md, sixteen
// plugins on two cores answered CreateContainer about 30% sooner and
// PostStartContainer about twice as fast. The cost is parallelism: a
// plugin whose handlers compute in parallel, or that serves other work
// (a busy metrics endpoint, its own goroutines), runs it all on one core;
// such a plugin should not call TuneProcess (or its operator should set
// the GOMAXPROCS environment variable).
//
// Measured with BenchmarkPluginProcess (go test -bench PluginProcess
// ./stub): a runtime in the test process calls CreateContainer on 1 or 8
// plugin processes in turn, on 2 cores shared with other builds (load
// average about 10); medians of 5 runs of 3000 calls, without and with
// TuneProcess:
//
//	                         per call       plugin CPU per call   plugin peak RSS
//	1 plugin                 99 → 89 µs     60 → 42 µs            21.1 → 20.3 MB
//	8 plugins                132 → 115 µs   89 → 70 µs            20.9 → 20.5 MB
//	plugins/template, 1      133 → 131 µs   81 → 66 µs            17.0 → 16.5 MB
//
// (The template logs every event; NRIKIT_STUB_BENCH_PLUGIN_BIN names the
// plugin binary to run instead of the test binary.) The CPU a plugin
// spends per request falls by a fifth to a third, which on a busy node is
// CPU the runtime and the other plugins get back; memory falls by about
// half a megabyte.
func TuneProcess() (previous int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	return runtime.GOMAXPROCS(DefaultMaxProcs)
}

// WithMaxProcs makes the stub set GOMAXPROCS to n when it starts; 0, the
// default, leaves it alone. The setting is the process's: prefer
// [TuneProcess] in the plugin's main. Stubs made with [NewBuiltin] never
// change GOMAXPROCS.
func WithMaxProcs(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("stub: WithMaxProcs: invalid value %d", n)
		}
		c.maxProcs = n
		return nil
	}
}

// applyProcessSettings sets GOMAXPROCS if WithMaxProcs asks for it and
// passes WithSyncGCPercent on to the sessions.
func (st *Stub) applyProcessSettings() {
	c := st.c
	c.syncGCPercent.Store(int32(c.cfg.syncGC))
	if n := c.cfg.maxProcs; n > 0 && runtime.GOMAXPROCS(0) != n {
		prev := runtime.GOMAXPROCS(n)
		c.log.Debug("set GOMAXPROCS for the plugin process", "plugin", c.name, "gomaxprocs", n, "was", prev)
	}
}
