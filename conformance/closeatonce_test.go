package conformance

import (
	"net"
	"strings"
	"sync"
	"testing"
)

// connListener yields one connection, then reports itself closed.
type connListener struct {
	mu   sync.Mutex
	conn net.Conn
}

func (l *connListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conn
	l.conn = nil
	if c == nil {
		return nil, net.ErrClosed
	}
	return c, nil
}

func (l *connListener) Close() error   { return nil }
func (l *connListener) Addr() net.Addr { return &net.UnixAddr{Name: "closes-at-once", Net: "unix"} }

// TestPluginClosingAtOnce connects plugins that close their end as soon as
// they are accepted. Each must fail CheckRegisters with the close as the
// reason, whether the checker's multiplexer reads the close before or after
// the checker has opened its logical connections. The first order used to
// fail the check's setup instead (CheckPlugin's error: exit 5 of nri check,
// not 6); it is rare, so the test runs many plugins.
func TestPluginClosingAtOnce(t *testing.T) {
	ctx := testContext(t)
	for i := range 300 {
		a, b := net.Pipe()
		b.Close() // the checker's reads see EOF at once
		r, err := CheckPlugin(ctx, PluginConfig{Listener: &connListener{conn: a}})
		if err != nil {
			t.Fatalf("plugin %d: CheckPlugin failed to set up, want a failed check: %v", i, err)
		}
		res := requireCheck(t, r, CheckRegisters)
		if res.Passed || !strings.Contains(res.Reason, "connection closed") || !strings.Contains(res.Reason, "EOF") {
			t.Fatalf("plugin %d: %s = %+v, want failed on the connection's close (EOF)", i, CheckRegisters, res)
		}
		if passed, failed := r.Counts(); passed != 0 || failed != 1 {
			t.Fatalf("plugin %d: %d passed, %d failed, want only %s failed:\n%s", i, passed, failed, CheckRegisters, renderText(t, r))
		}
	}
}
