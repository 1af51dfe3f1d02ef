package adaptation

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// unregisteredCount returns how many connections have not registered.
func (a *Adaptation) unregisteredCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unregistered
}

// holdConnections dials n connections to the socket from this process
// that never register, and reports how many the runtime kept (the
// others it closed at once). It waits for the runtime's verdict on each
// connection before dialing the next.
func holdConnections(t *testing.T, rt *testRuntime, n int) (kept int) {
	t.Helper()
	for i := range n {
		c, err := net.Dial("unix", rt.socket)
		must(t, err)
		t.Cleanup(func() { c.Close() })
		deadline := time.Now().Add(hangGuard)
		for {
			if rt.a.unregisteredCount() == kept+1 {
				kept++
				break
			}
			must(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
				break // refused
			}
			if time.Now().After(deadline) {
				t.Fatalf("connection %d: neither counted nor closed", i)
			}
		}
	}
	return kept
}

// TestPendingConnectionsPerPeer: one process holding as many
// unregistered connections as it can does not keep another process's
// plugin from registering.
func TestPendingConnectionsPerPeer(t *testing.T) {
	rt := newTestRuntime(t, nil)
	rt.start(t)
	kept := holdConnections(t, rt, DefaultMaxPendingConnections)
	t.Logf("this process holds %d unregistered connections", kept)
	startExternal(t, rt.logs, "other", helperArgs("stub", "-socket", rt.socket, "-name", "other", "-idx", "20"))
	if got := rt.logs.wait(t, "registration answer", output("other", "REGISTER")).msg; got != "REGISTER ok" {
		t.Errorf("plugin of another process got %q, want REGISTER ok", got)
	}
	if kept != DefaultMaxPendingConnectionsPerPeer {
		t.Errorf("one process holds %d unregistered connections, want %d", kept, DefaultMaxPendingConnectionsPerPeer)
	}
	rt.logs.wait(t, "refusal naming this process", func(r logRecord) bool {
		return r.msg == "refusing plugin connection: too many connections of its process have not registered yet" &&
			r.attrs["pid"] == strconv.Itoa(os.Getpid()) && r.attrs["limit"] == strconv.Itoa(DefaultMaxPendingConnectionsPerPeer)
	})
}
