package conformance

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
)

// frozenTrunk is a plugin's socket that it never reads, as a plugin
// process that is stopped (SIGSTOP) right after registering: the
// checker's writes fill the socket buffers and then block.
type frozenTrunk struct {
	net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *frozenTrunk) Read([]byte) (int, error) {
	<-c.closed
	return 0, net.ErrClosed
}

func (c *frozenTrunk) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestCheckPluginFrozenPlugin guards against a check that hangs on a
// plugin that stops reading its socket (issue 13): a Configure request
// larger than the socket buffers cannot be written, and without a write
// timeout on the checker's connection the write, and the check, would
// block for ever whatever the request timeout says.
func TestCheckPluginFrozenPlugin(t *testing.T) {
	const requestTimeout = time.Second
	path := shortSocketPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	trunk := &frozenTrunk{Conn: conn, closed: make(chan struct{})}
	m, err := mux.New(trunk)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rc, err := m.Open(mux.RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(rc)
	defer client.Close()
	var registering sync.WaitGroup
	registering.Add(1)
	go func() {
		defer registering.Done()
		// Never answered: the answer comes after Configure, which the
		// plugin does not read.
		_, _ = api.NewRuntimeClient(client).RegisterPlugin(testContext(t), &api.RegisterPluginRequest{PluginName: "frozen", PluginIdx: "40"})
	}()
	defer registering.Wait()
	defer m.Close() // ends the RegisterPlugin call before the Wait

	type outcome struct {
		r   *Report
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		r, err := CheckPlugin(testContext(t), PluginConfig{
			Listener:       l,
			Config:         strings.Repeat("x", 2<<20),
			RequestTimeout: requestTimeout,
		})
		done <- outcome{r, err}
	}()
	var res outcome
	select {
	case res = <-done:
	case <-time.After(10 * requestTimeout):
		m.Close() // unblock the checker before failing
		<-done
		t.Fatalf("CheckPlugin still running %v after a plugin stopped reading", 10*requestTimeout)
	}
	if res.err != nil {
		t.Fatalf("CheckPlugin: %v", res.err)
	}
	if took := time.Since(start); took > 5*requestTimeout {
		t.Errorf("CheckPlugin took %v, want about the request timeout %v", took, requestTimeout)
	}
	cfg := requireCheck(t, res.r, CheckConfigure)
	if cfg.Passed || !strings.Contains(cfg.Reason, "does not read its socket") {
		t.Errorf("Configure check = %+v, want a failure saying the plugin does not read", cfg)
	}
}
