package wire

import "sync"

// The Runtime service's ttrpc server reads a plugin's requests as fast as
// they arrive and runs each in a goroutine of its own, with no limit. So
// that a plugin that floods the runtime with UpdateContainers cannot make
// it hold an unbounded number of calls (goroutines, and the requests'
// bytes), the logical connection the server reads from is gated: a new
// message is only read while fewer than the gate's count of requests are
// unanswered and they hold fewer than its bytes together. Requests then
// wait in the connection's bounded read queue (mux.WithReadQueueBytes)
// and, once it is full, in the plugin's socket: the plugin's own writes
// block, which its write timeout bounds.

// Gate counts a plugin's Runtime-service requests that are not answered
// yet, and their bytes, and holds the reading of further ones (by the
// [Conn] it is given to) at the limit. It is safe for concurrent use.
type Gate struct {
	max, maxBytes int

	mu     sync.Mutex
	n      int
	bytes  int
	sizes  map[uint32]int // unanswered bytes by stream ID
	room   chan struct{}  // signalled when n drops
	closed chan struct{}
	once   sync.Once
}

// NewGate returns a gate that holds reading while maxRequests requests
// are unanswered, or while the unanswered ones (at least one) hold
// maxBytes bytes or more.
func NewGate(maxRequests, maxBytes int) *Gate {
	return &Gate{max: maxRequests, maxBytes: maxBytes, sizes: map[uint32]int{},
		room: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Unanswered returns the requests read and not answered yet.
func (g *Gate) Unanswered() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// wait blocks while the limit of requests is unanswered; it reports false
// once the gate is closed or gone is.
func (g *Gate) wait(gone <-chan struct{}) bool {
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
func (g *Gate) request(stream uint32, size int) {
	g.mu.Lock()
	g.n++
	g.bytes += size
	g.sizes[stream] += size
	g.mu.Unlock()
}

// answered counts an answer on stream.
func (g *Gate) answered(stream uint32) {
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

// close releases the waits, for good.
func (g *Gate) close() { g.once.Do(func() { close(g.closed) }) }
