package wire

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// ConnConfig is what a [Conn] enforces.
type ConnConfig struct {
	// Limit is the largest message accepted, read on each message's
	// header (so it may change while the connection is used: a plugin's
	// connection accepts small messages until it is configured).
	Limit *atomic.Int64
	// Violate is told why when the peer broke a bound; it is expected to
	// close the connection (the Read that found it fails with the same
	// error).
	Violate func(error)
	// Gone is closed when the connection is: a Read waiting at the gate
	// returns then.
	Gone <-chan struct{}
	// Gate, if not nil, gates the reading of requests (the Runtime
	// service's connection); see [Gate].
	Gate *Gate
}

// Conn is a logical connection of a plugin whose ttrpc messages the
// runtime follows as they are read: their length must stay within
// [ConnConfig.Limit], checked on each header before ttrpc allocates the
// message; ttrpc's envelope of each request and response must stay
// within internal/wirelimit's bounds, checked before ttrpc decodes it;
// and, with a [Gate], reading waits at each message boundary while the
// gate is full, and the answers written are counted in it.
type Conn struct {
	net.Conn
	cfg ConnConfig
	in  scanner // used by the one reading goroutine only
	out scanner // guarded by mu
	mu  sync.Mutex
}

// NewConn returns c with its messages followed as cfg says.
func NewConn(c net.Conn, cfg ConnConfig) *Conn {
	m := &Conn{Conn: c, cfg: cfg}
	m.in.envelopes = true
	return m
}

// Read implements net.Conn. With a gate, a read ends at the end of a
// message, for the gate to hold the next.
func (c *Conn) Read(p []byte) (int, error) {
	if c.cfg.Gate != nil {
		if c.in.atBoundary() && !c.cfg.Gate.wait(c.cfg.Gone) {
			return 0, net.ErrClosed
		}
		p = p[:c.in.limit(len(p))]
	}
	n, err := c.Conn.Read(p)
	if verr := c.in.feed(p[:n], c.header); verr != nil {
		c.cfg.Violate(verr)
		return 0, verr
	}
	return n, err
}

// header checks the header of a message read and counts a request (or a
// stream's data) in the gate.
func (c *Conn) header(typ byte, stream uint32, size int) error {
	// The limit now, not when the Read began: a Read that waited since
	// before the plugin was configured reads a message sent after.
	if limit := int(c.cfg.Limit.Load()); size > limit {
		return fmt.Errorf("plugin sent a %d-byte message before it was configured (limit %d)", size, limit)
	}
	if c.cfg.Gate != nil && (typ == typeRequest || typ == typeData) {
		c.cfg.Gate.request(stream, size)
	}
	return nil
}

// Write implements net.Conn, counting the answers written in the gate.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.cfg.Gate == nil {
		return n, err
	}
	c.mu.Lock()
	_ = c.out.feed(p[:n], func(typ byte, stream uint32, _ int) error {
		if typ == typeResponse {
			c.cfg.Gate.answered(stream)
		}
		return nil
	})
	c.mu.Unlock()
	return n, err
}

// Close implements net.Conn and releases a Read waiting at the gate.
func (c *Conn) Close() error {
	if c.cfg.Gate != nil {
		c.cfg.Gate.close()
	}
	return c.Conn.Close()
}

// WriteSignal tells when a connection it wraps has written, once armed:
// the runtime arms it before it answers RegisterPlugin, and waits for
// the answer to have left before it closes a connection it refuses. It
// is safe for concurrent use.
type WriteSignal struct {
	armed   atomic.Bool
	written chan struct{}
	once    sync.Once
}

// NewWriteSignal returns a signal not armed.
func NewWriteSignal() *WriteSignal { return &WriteSignal{written: make(chan struct{})} }

// Arm makes the next write through a connection of [WriteSignal.Wrap]
// close [WriteSignal.Written].
func (s *WriteSignal) Arm() { s.armed.Store(true) }

// Written is closed after the first write once armed.
func (s *WriteSignal) Written() <-chan struct{} { return s.written }

// Wrap returns c, its writes signalled.
func (s *WriteSignal) Wrap(c net.Conn) net.Conn { return &signalConn{Conn: c, s: s} }

// signalConn is a connection whose writes a WriteSignal is told of.
type signalConn struct {
	net.Conn
	s *WriteSignal
}

// Write implements net.Conn.
func (c *signalConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.s.armed.Load() {
		c.s.once.Do(func() { close(c.s.written) })
	}
	return n, err
}
