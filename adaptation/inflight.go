package adaptation

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
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
// it in pieces.
type msgScanner struct {
	hdr  [ttrpcHeaderSize]byte
	have int // header bytes seen of the current message
	left int // payload bytes left of the current message, once the header is complete
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
// length of every message header completed in it.
func (s *msgScanner) feed(p []byte, onHeader func(typ byte, stream uint32, size int)) {
	for len(p) > 0 {
		if s.have < ttrpcHeaderSize {
			n := copy(s.hdr[s.have:], p)
			s.have += n
			p = p[n:]
			if s.have == ttrpcHeaderSize {
				s.left = int(binary.BigEndian.Uint32(s.hdr[0:4]))
				onHeader(s.hdr[8], binary.BigEndian.Uint32(s.hdr[4:8]), s.left)
				if s.left == 0 {
					s.have = 0
				}
			}
			continue
		}
		n := min(len(p), s.left)
		s.left -= n
		p = p[n:]
		if s.left == 0 {
			s.have = 0
		}
	}
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
// allocates the message; and, with a gate (the Runtime service's
// connection), reading waits at each message boundary while the gate is
// full. Without a gate and once the limit is lifted, reads pass through.
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
	limit := int(c.limit.Load())
	if c.gate == nil && limit >= MaxMessageSize {
		return c.Conn.Read(p)
	}
	if c.in.atBoundary() && c.gate != nil && !c.gate.wait(c.gone) {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p[:c.in.limit(len(p))])
	var tooLarge error
	c.in.feed(p[:n], func(typ byte, stream uint32, size int) {
		if size > limit {
			tooLarge = fmt.Errorf("plugin sent a %d-byte message before it was configured (limit %d)", size, limit)
		}
		if c.gate != nil && (typ == ttrpcTypeRequest || typ == ttrpcTypeData) {
			c.gate.request(stream, size)
		}
	})
	if tooLarge != nil {
		c.violate(tooLarge)
		return 0, tooLarge
	}
	return n, err
}

// Write implements net.Conn, counting the answers written.
func (c *msgConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.gate == nil {
		return n, err
	}
	c.mu.Lock()
	c.out.feed(p[:n], func(typ byte, stream uint32, _ int) {
		if typ == ttrpcTypeResponse {
			c.gate.answered(stream)
		}
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
