package mux

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/internal/socketpair"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// timeout bounds every wait in the tests so that a bug fails a test instead
// of hanging it; it is never used to assert timing.
const timeout = 20 * time.Second

// unixPair returns the two ends of a unix socket pair.
func unixPair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	p, err := socketpair.New()
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	a, err := p.LocalConn()
	if err != nil {
		tb.Fatal(err)
	}
	f := p.PeerFile()
	b, err := net.FileConn(f)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func newMux(tb testing.TB, trunk net.Conn, opts ...Option) *Mux {
	tb.Helper()
	m, err := New(trunk, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

func open(tb testing.TB, m *Mux, id ConnID) net.Conn {
	tb.Helper()
	c, err := m.Open(id)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func frame(id ConnID, payload []byte) []byte {
	b := make([]byte, HeaderSize+len(payload))
	binary.BigEndian.PutUint32(b[0:4], uint32(id))
	binary.BigEndian.PutUint32(b[4:8], uint32(len(payload)))
	copy(b[HeaderSize:], payload)
	return b
}

func header(id ConnID, size uint32) []byte {
	b := make([]byte, HeaderSize)
	binary.BigEndian.PutUint32(b[0:4], uint32(id))
	binary.BigEndian.PutUint32(b[4:8], size)
	return b
}

func mustWrite(tb testing.TB, w io.Writer, b []byte) {
	tb.Helper()
	if _, err := w.Write(b); err != nil {
		tb.Fatal(err)
	}
}

// readN reads exactly n bytes from r, failing the test on error.
func readN(tb testing.TB, r net.Conn, n int) []byte {
	tb.Helper()
	r.SetReadDeadline(time.Now().Add(timeout))
	defer r.SetReadDeadline(time.Time{})
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		tb.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

func waitDone(tb testing.TB, m *Mux) {
	tb.Helper()
	select {
	case <-m.Done():
	case <-time.After(timeout):
		tb.Fatal("mux did not shut down")
	}
}

// oneByteConn returns at most one byte per Read.
type oneByteConn struct {
	net.Conn
	reads int
}

func (c *oneByteConn) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	c.reads++
	return c.Conn.Read(p)
}

// memConn is an in-memory trunk: reads come from r (after gate, if set, is
// closed), writes go to w. Close unblocks a Read waiting on the gate.
type memConn struct {
	r    io.Reader
	gate chan struct{}

	mu     sync.Mutex
	w      bytes.Buffer
	closed chan struct{}
	once   sync.Once
}

func newMemConn(data []byte, gate chan struct{}) *memConn {
	return &memConn{r: bytes.NewReader(data), gate: gate, closed: make(chan struct{})}
}

func (c *memConn) Read(p []byte) (int, error) {
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	return c.r.Read(p)
}

func (c *memConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

func (c *memConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *memConn) LocalAddr() net.Addr                { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr               { return memAddr{} }
func (c *memConn) SetDeadline(t time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "" }
