package stub

import (
	"fmt"
	"os"
	"runtime"
)

// DefaultMaxProcs is the GOMAXPROCS a stub sets when it starts as a
// plugin process of its own: launched by the runtime (NRI_PLUGIN_SOCKET)
// or dialing the runtime's socket with the default dialer. It does not
// when the GOMAXPROCS environment variable is set, when [WithMaxProcs]
// says otherwise, or when the stub is given its connection
// ([WithConnection]) or a dialer ([WithDialer]), which is how stubs are
// embedded in other programs and tests.
//
// A plugin process spends nearly all its time waiting for the runtime,
// and the runtime sends it one request at a time. With more than one P,
// every request wakes further OS threads that spin looking for work
// while the request moves from the connection's reader to the handler
// and back; on a node with many plugins and few cores those spinning
// threads take the CPU from the runtime and from the plugin that is
// being called. One P makes each hand-off a plain goroutine switch (see
// BENCHMARKS.md: sixteen plugins on two cores answer CreateContainer
// about 30% sooner and PostStartContainer about twice as fast).
const DefaultMaxProcs = 1

// WithMaxProcs sets the GOMAXPROCS the stub applies when it starts; 0
// leaves the process's setting alone. The default is [DefaultMaxProcs]
// under the conditions given there. A plugin whose
// handlers compute in parallel should pass 0 or the parallelism it needs.
// Stubs made with [NewBuiltin] never change GOMAXPROCS.
func WithMaxProcs(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("stub: WithMaxProcs: invalid value %d", n)
		}
		c.maxProcs = processSetting{value: n, given: true}
		return nil
	}
}

// processSetting is an option for a process-wide runtime setting that a
// stub applies when it owns its process (WithMaxProcs, WithSyncGCPercent).
type processSetting struct {
	value int  // 0: leave the process's setting alone
	given bool // the option was given
}

// resolve returns the value a stub connecting through source applies (0:
// none): the option's, if given; else none if the environment variable
// envVar is set (env looks it up) or the stub does not own its process;
// else def.
func (s processSetting) resolve(c *config, source connSource, envVar string, def int, env func(string) string) int {
	switch {
	case s.given:
		return s.value
	case env(envVar) != "", !ownsProcess(source, c):
		return 0
	}
	return def
}

// maxProcsFor returns the GOMAXPROCS a stub connecting through source
// applies (0: none); env looks up environment variables.
func (c *config) maxProcsFor(source connSource, env func(string) string) int {
	return c.maxProcs.resolve(c, source, "GOMAXPROCS", DefaultMaxProcs, env)
}

// ownsProcess reports whether a stub connecting through source runs as a
// plugin process of its own (launched, or dialing the runtime's socket
// with the default dialer), rather than embedded in another program.
func ownsProcess(source connSource, c *config) bool {
	return source != givenConn && (source != dialSocket || c.dialer == nil)
}

// applyProcessSettings sets GOMAXPROCS as configured (see WithMaxProcs)
// and decides the GC percentage of Synchronize (see WithSyncGCPercent).
func (st *Stub) applyProcessSettings() {
	c := st.c
	c.syncGCPercent.Store(int32(c.cfg.syncGCPercentFor(st.id.source, os.Getenv)))
	n := c.cfg.maxProcsFor(st.id.source, os.Getenv)
	if n > 0 && runtime.GOMAXPROCS(0) != n {
		prev := runtime.GOMAXPROCS(n)
		c.log.Debug("set GOMAXPROCS for the plugin process", "plugin", c.name, "gomaxprocs", n, "was", prev)
	}
}
