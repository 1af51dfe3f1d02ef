package nriconn

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// countConn counts the bytes given to a connection to write (before it
// writes them: the peer may read them before Write returns).
type countConn struct {
	net.Conn
	written *atomic.Int64
}

func (c *countConn) Write(p []byte) (int, error) {
	c.written.Add(int64(len(p)))
	return c.Conn.Write(p)
}

// TestSessionHooks opens a session on each side of a connection and
// checks the session's hooks: the server's connection is wrapped (the
// answer to a call goes through the wrapper), and when the peer goes
// away the client's end and the server's are reported.
func TestSessionHooks(t *testing.T) {
	a, b := net.Pipe()
	var answered atomic.Int64
	clientClosed := make(chan struct{})
	served := make(chan error, 1)
	rs := &runtimeService{got: make(chan *api.RegisterPluginRequest, 1)}
	rt, err := Open(a, RuntimeRole, Config{
		ServerConn:   func(c net.Conn) net.Conn { return &countConn{Conn: c, written: &answered} },
		Register:     func(s *Session) { api.RegisterRuntimeService(s.Server, rs) },
		ClientClosed: func() { close(clientClosed) },
		Served:       func(err error) { served <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	pl, err := Open(b, PluginRole, Config{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.NewRuntimeClient(pl.Client).RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "x", PluginIdx: "10"}); err != nil {
		t.Fatalf("plugin → runtime call: %v", err)
	}
	<-rs.got
	if answered.Load() == 0 {
		t.Error("the answer was not written through the ServerConn wrapper")
	}
	select {
	case <-clientClosed:
		t.Fatal("ClientClosed called while the connection is up")
	case err := <-served:
		t.Fatalf("Served(%v) called while the connection is up", err)
	default:
	}

	pl.Close() // the peer goes away
	select {
	case <-clientClosed:
	case <-ctx.Done():
		t.Fatal("ClientClosed not called after the peer went away")
	}
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatal("Served not called after the peer went away")
	}
}
