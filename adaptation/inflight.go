package adaptation

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/internal/wirelimit"
)

// The Runtime service's ttrpc server reads a plugin's requests as fast as
// they arrive and runs each in a goroutine of its own, with no limit. So
// that a plugin that floods the runtime with UpdateContainers cannot make
// it hold an unbounded number of calls (goroutines, and the requests'
// bytes), the logical connection the server reads from is gated: a new
// message is only read while fewer than the limit of requests are
// unanswered ([WithMaxInFlightUpdates]) and they hold fewer than
// [MaxMessageSize] bytes together. Requests then wait in the
// connection's bounded read queue (mux.WithReadQueueBytes) and, once it
// is full, in the plugin's socket: the plugin's own writes block, which
// its write timeout bounds.

// ttrpc's message header: length (4 bytes), stream ID (4), type (1),
// flags (1), then length bytes of payload.
const (
	ttrpcHeaderSize   = 10
	ttrpcTypeRequest  = 1
	ttrpcTypeResponse = 2
	ttrpcTypeData     = 3
)

// msgScanner follows the message boundaries of a ttrpc byte stream fed to
// it in pieces; with envelopes set, it checks ttrpc's envelope of each
// request and response as its bytes pass (see feed).
type msgScanner struct {
	hdr  [ttrpcHeaderSize]byte
	have int // header bytes seen of the current message
	left int // payload bytes left of the current message, once the header is complete

	envelopes bool
	env       wirelimit.Scanner // the current message's envelope
	scanning  bool              // env follows the current message
}

// atBoundary reports whether the next byte starts a message.
func (s *msgScanner) atBoundary() bool { return s.have == 0 && s.left == 0 }

// limit returns how many of n bytes can be taken without crossing the end
// of the current header or payload.
func (s *msgScanner) limit(n int) int {
	if s.have < ttrpcHeaderSize {
		return min(n, ttrpcHeaderSize-s.have)
	}
	return min(n, s.left)
}

// feed takes in p and calls onHeader with the type, stream ID and data
// length of every message header completed in it. With envelopes set, it
// checks the payload of every request and response against ttrpc's
// envelope (wirelimit.RequestEnvelope, ResponseEnvelope: the metadata of
// a request, the status and its details of a response, not the method's
// message inside) as its bytes pass, before ttrpc decodes it. It returns
// the first error of onHeader or of a check.
func (s *msgScanner) feed(p []byte, onHeader func(typ byte, stream uint32, size int) error) error {
	for len(p) > 0 {
		if s.have < ttrpcHeaderSize {
			n := copy(s.hdr[s.have:], p)
			s.have += n
			p = p[n:]
			if s.have < ttrpcHeaderSize {
				continue
			}
			typ := s.hdr[8]
			s.left = int(binary.BigEndian.Uint32(s.hdr[0:4]))
			if err := onHeader(typ, binary.BigEndian.Uint32(s.hdr[4:8]), s.left); err != nil {
				return err
			}
			s.scanning = s.envelopes && (typ == ttrpcTypeRequest || typ == ttrpcTypeResponse)
			if s.scanning {
				env := wirelimit.ResponseEnvelope()
				if typ == ttrpcTypeRequest {
					env = wirelimit.RequestEnvelope()
				}
				s.env.Reset(env, s.left)
			}
		} else {
			n := min(len(p), s.left)
			if s.scanning {
				if err := s.env.Feed(p[:n]); err != nil {
					return envelopeError(err)
				}
			}
			s.left -= n
			p = p[n:]
		}
		if s.left == 0 {
			s.have = 0
			if s.scanning {
				if err := s.env.Close(); err != nil {
					return envelopeError(err)
				}
			}
		}
	}
	return nil
}

// envelopeError is why a plugin's message was refused by its envelope's
// check.
func envelopeError(err error) error {
	return fmt.Errorf("plugin sent a ttrpc message the runtime does not decode: %w", err)
}

// inflightGate counts a plugin's Runtime-service requests that are not
// answered yet, and their bytes, and holds the reading of further ones at
// the limit.
type inflightGate struct {
	max, maxBytes int

	mu     sync.Mutex
	n      int
	bytes  int
	sizes  map[uint32]int // unanswered bytes by stream ID
	room   chan struct{}  // signalled when n drops
	closed chan struct{}
	once   sync.Once
}

func newInflightGate(max int) *inflightGate {
	return &inflightGate{max: max, maxBytes: MaxMessageSize, sizes: map[uint32]int{},
		room: make(chan struct{}, 1), closed: make(chan struct{})}
}

// wait blocks while the limit of requests is unanswered; it reports false
// once the gate is closed.
func (g *inflightGate) wait(gone <-chan struct{}) bool {
	for {
		g.mu.Lock()
		full := g.n >= g.max || (g.n > 0 && g.bytes >= g.maxBytes)
		g.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-g.room:
		case <-g.closed:
			return false
		case <-gone:
			return false
		}
	}
}

// request counts a message of size bytes on stream that the server
// answers.
func (g *inflightGate) request(stream uint32, size int) {
	g.mu.Lock()
	g.n++
	g.bytes += size
	g.sizes[stream] += size
	g.mu.Unlock()
}

// answered counts an answer on stream.
func (g *inflightGate) answered(stream uint32) {
	g.mu.Lock()
	if g.n > 0 {
		g.n--
	}
	g.bytes -= g.sizes[stream]
	delete(g.sizes, stream)
	g.mu.Unlock()
	select {
	case g.room <- struct{}{}:
	default:
	}
}

func (g *inflightGate) close() { g.once.Do(func() { close(g.closed) }) }

// msgConn is a logical connection of a plugin whose ttrpc messages the
// runtime follows as they are read: their length must stay within the
// endpoint's message limit (a small one until the plugin is configured,
// see connEndpoint.setMessageLimit), checked on each header before ttrpc
// allocates the message; ttrpc's envelope of each request and response
// must stay within its bounds (msgScanner.feed), checked before ttrpc
// decodes it; and, with a gate (the Runtime service's connection),
// reading waits at each message boundary while the gate is full.
type msgConn struct {
	net.Conn
	// limit is the largest message accepted now; violate is told (and
	// closes the connection) when one is larger; gone is closed when the
	// connection is.
	limit   *atomic.Int64
	violate func(error)
	gone    <-chan struct{}
	gate    *inflightGate // nil: not gated
	in      msgScanner    // used by the one reading goroutine only
	out     msgScanner    // guarded by mu
	mu      sync.Mutex
}

// Read implements net.Conn.
func (c *msgConn) Read(p []byte) (int, error) {
	if c.gate != nil {
		if c.in.atBoundary() && !c.gate.wait(c.gone) {
			return 0, net.ErrClosed
		}
		// Stop at the end of the message, for the gate to hold the next.
		p = p[:c.in.limit(len(p))]
	}
	n, err := c.Conn.Read(p)
	if verr := c.in.feed(p[:n], c.header); verr != nil {
		c.violate(verr)
		return 0, verr
	}
	return n, err
}

// header checks the header of a message read and counts a request (or a
// stream's data) in the gate.
func (c *msgConn) header(typ byte, stream uint32, size int) error {
	// The limit now, not when the Read began: a Read that waited since
	// before the plugin was configured reads a message sent after.
	if limit := int(c.limit.Load()); size > limit {
		return fmt.Errorf("plugin sent a %d-byte message before it was configured (limit %d)", size, limit)
	}
	if c.gate != nil && (typ == ttrpcTypeRequest || typ == ttrpcTypeData) {
		c.gate.request(stream, size)
	}
	return nil
}

// Write implements net.Conn, counting the answers written.
func (c *msgConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.gate == nil {
		return n, err
	}
	c.mu.Lock()
	_ = c.out.feed(p[:n], func(typ byte, stream uint32, _ int) error {
		if typ == ttrpcTypeResponse {
			c.gate.answered(stream)
		}
		return nil
	})
	c.mu.Unlock()
	return n, err
}

// Close implements net.Conn and releases a Read waiting at the gate.
func (c *msgConn) Close() error {
	if c.gate != nil {
		c.gate.close()
	}
	return c.Conn.Close()
}

// unanswered returns the requests read and not answered yet.
func (g *inflightGate) unanswered() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
