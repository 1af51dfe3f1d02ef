package mux

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// addr is the net.Addr of a logical connection.
type addr struct {
	id    ConnID
	trunk net.Addr
}

// Network returns "mux".
func (a addr) Network() string { return "mux" }

// String returns "mux:<id>", followed by "@<trunk address>" when the trunk
// address is not empty.
func (a addr) String() string {
	if a.trunk != nil {
		if s := a.trunk.String(); s != "" {
			return fmt.Sprintf("mux:%d@%s", a.id, s)
		}
	}
	return fmt.Sprintf("mux:%d", a.id)
}

// conn is a logical connection. It implements net.Conn.
type conn struct {
	m  *Mux
	id ConnID

	queue     chan []byte   // frames from the reader goroutine
	closed    chan struct{} // closed by Close
	closeOnce sync.Once

	// queued counts the payload bytes in queue; space is signalled
	// when a reader takes a frame, for the trunk reader waiting for room
	// (see enqueue). Only the trunk reader adds to queued.
	queued atomic.Int64
	space  chan struct{}

	// wlock serialises the writes of this connection (a one-slot
	// semaphore, so that waiting for it can be bounded).
	wlock chan struct{}

	rmu   sync.Mutex // serialises readers; guards frame and rest
	frame []byte     // current frame, recycled once consumed
	rest  []byte     // unread remainder of frame

	rdl deadline

	// wdl is the write deadline in Unix nanoseconds (0: none).
	wdl atomic.Int64
}

func newConn(m *Mux, id ConnID) *conn {
	return &conn{
		m:      m,
		id:     id,
		queue:  make(chan []byte, m.cfg.queueLen),
		closed: make(chan struct{}),
		space:  make(chan struct{}, 1),
		wlock:  make(chan struct{}, 1),
		rdl:    deadline{ch: make(chan struct{})},
	}
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "mux", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Read reads data received on the logical connection. It blocks until data
// is available, the read deadline passes (the error then satisfies
// errors.Is(err, os.ErrDeadlineExceeded)), the connection is closed locally
// (net.ErrClosed), or the Mux shuts down. After a shutdown, Read first
// returns the data already queued, then io.EOF if the Mux was closed locally
// or the peer closed the trunk (cleanly, or while a write to it was under
// way: EPIPE, ECONNRESET), or else an error wrapping the cause of the
// failure (which Mux.Err reports in every case).
func (c *conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.isClosed() {
			return 0, c.opError("read", net.ErrClosed)
		}
		if c.rdl.expired() {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		if len(p) == 0 {
			return 0, nil
		}
		if len(c.rest) > 0 {
			n := copy(p, c.rest)
			c.rest = c.rest[n:]
			if len(c.rest) == 0 {
				putFrame(c.frame)
				c.frame, c.rest = nil, nil
			}
			return n, nil
		}
		select {
		case f := <-c.queue:
			c.took(f)
			c.frame, c.rest = f, f
		case <-c.closed:
		case <-c.rdl.wait():
		case <-c.m.done:
			// The reader has exited: nothing more will be queued.
			select {
			case f := <-c.queue:
				c.took(f)
				c.frame, c.rest = f, f
				continue
			default:
			}
			cause := c.m.cause()
			if cause == ErrClosed || peerClosed(cause) {
				return 0, io.EOF
			}
			return 0, c.opError("read", cause)
		}
	}
}

// peerClosed reports whether a trunk failure means that the peer closed
// the connection: cleanly (EOF on a read) or while this side was still
// writing (EPIPE, ECONNRESET). Reads then end with io.EOF, as on a clean
// close, because nothing was lost that the peer still wanted to say.
func peerClosed(cause error) bool {
	return errors.Is(cause, io.EOF) || errors.Is(cause, syscall.EPIPE) || errors.Is(cause, syscall.ECONNRESET)
}

// enqueue hands a frame from the trunk reader to the connection. It waits
// while the connection's queue is full, in frames or in bytes
// (backpressure), until a reader makes room, the connection is closed
// locally (the frame is discarded) or the mux shuts down.
func (c *conn) enqueue(frame []byte) error {
	for {
		// Readers only take bytes away meanwhile, and signal space
		// when they do, so no wake-up is lost.
		if q := c.queued.Load(); q == 0 || q+int64(len(frame)) <= int64(c.m.cfg.queueBytes) {
			c.queued.Add(int64(len(frame)))
			break
		}
		select {
		case <-c.space:
		case <-c.closed:
			return nil
		case <-c.m.closing:
			return errShutdown
		}
	}
	select {
	case c.queue <- frame:
	case <-c.closed:
		// Closed locally meanwhile: discard.
	case <-c.m.closing:
		return errShutdown
	}
	return nil
}

// took accounts for a frame a reader took from the queue.
func (c *conn) took(f []byte) {
	c.queued.Add(-int64(len(f)))
	select {
	case c.space <- struct{}{}:
	default:
	}
}

// acquire takes the one-slot semaphore sem, waiting at most until dl
// (zero: no limit), and fails if the connection is closed, its write
// deadline has passed or the mux shuts down.
func (c *conn) acquire(sem chan struct{}, dl time.Time) error {
	select {
	case sem <- struct{}{}:
	default:
		var expired <-chan time.Time
		if !dl.IsZero() {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			expired = t.C
		}
		select {
		case sem <- struct{}{}:
		case <-c.closed:
			return c.opError("write", net.ErrClosed)
		case <-c.m.closing:
			return c.opError("write", fmt.Errorf("%w: %w", net.ErrClosed, c.m.cause()))
		case <-expired:
			return c.opError("write", os.ErrDeadlineExceeded)
		}
	}
	if err := c.checkWritable(); err != nil {
		<-sem
		return err
	}
	return nil
}

// writeDeadline returns the connection's write deadline (zero: none).
func (c *conn) writeDeadline() time.Time {
	if d := c.wdl.Load(); d != 0 {
		return time.Unix(0, d)
	}
	return time.Time{}
}

// checkWritable reports why the connection cannot be written to, if so.
func (c *conn) checkWritable() error {
	if c.isClosed() {
		return c.opError("write", net.ErrClosed)
	}
	select {
	case <-c.m.closing:
		return c.opError("write", fmt.Errorf("%w: %w", net.ErrClosed, c.m.cause()))
	default:
	}
	if d := c.wdl.Load(); d != 0 && time.Now().UnixNano() >= d {
		return c.opError("write", os.ErrDeadlineExceeded)
	}
	return nil
}

// Write sends p on the logical connection, split into frames of at most the
// maximum payload size. It fails if the connection was closed locally or
// the Mux has shut down. It returns by the write deadline (or the mux's
// write timeout, whichever is sooner) at the latest: a write that could
// not start by then fails with os.ErrDeadlineExceeded and leaves the mux
// running; one cut short on the trunk fails the whole Mux, as does any
// failed trunk write.
func (c *conn) Write(p []byte) (int, error) {
	return c.m.write(c, p)
}

// Close closes the logical connection. Nothing is sent on the wire and the
// trunk stays open; frames received for the connection ID afterwards are
// discarded. Blocked reads return net.ErrClosed.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.rdl.set(time.Time{})
		c.m.forget(c)
	})
	return nil
}

// LocalAddr describes the logical connection and the trunk's local address.
func (c *conn) LocalAddr() net.Addr { return addr{id: c.id, trunk: c.m.trunk.LocalAddr()} }

// RemoteAddr describes the logical connection and the trunk's remote address.
func (c *conn) RemoteAddr() net.Addr { return addr{id: c.id, trunk: c.m.trunk.RemoteAddr()} }

// SetDeadline sets both the read and the write deadline.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline. It also applies to a Read that is
// already blocked. A zero t disables the deadline.
func (c *conn) SetReadDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opError("set", net.ErrClosed)
	}
	c.rdl.set(t)
	return nil
}

// SetWriteDeadline sets the write deadline of the writes that start
// afterwards (see Write). A zero t disables the deadline.
func (c *conn) SetWriteDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opError("set", net.ErrClosed)
	}
	var d int64
	if !t.IsZero() {
		d = max(t.UnixNano(), 1)
	}
	c.wdl.Store(d)
	return nil
}

// deadline is a resettable deadline: its channel is closed once the deadline
// has passed.
type deadline struct {
	mu    sync.Mutex
	gen   uint64 // incremented by set; stale timers compare it
	ch    chan struct{}
	timer *time.Timer
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	select {
	case <-d.ch:
		d.ch = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		close(d.ch)
		return
	}
	gen, ch := d.gen, d.ch
	d.timer = time.AfterFunc(dur, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen {
			close(ch)
		}
	})
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

func (d *deadline) expired() bool {
	select {
	case <-d.wait():
		return true
	default:
		return false
	}
}

// listener serves a single logical connection; see Mux.Listen.
type listener struct {
	m    *Mux
	addr net.Addr

	mu        sync.Mutex
	c         *conn // nil once accepted
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept returns the logical connection on its first call. Later calls
// block until the listener is closed or the Mux shuts down and then return
// an error wrapping net.ErrClosed.
func (l *listener) Accept() (net.Conn, error) {
	l.mu.Lock()
	select {
	case <-l.closed:
		l.mu.Unlock()
		return nil, l.closedErr()
	default:
	}
	if c := l.c; c != nil {
		l.c = nil
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	select {
	case <-l.closed:
	case <-l.m.closing:
	}
	return nil, l.closedErr()
}

func (l *listener) closedErr() error {
	return &net.OpError{Op: "accept", Net: "mux", Addr: l.addr, Err: net.ErrClosed}
}

// Close closes the listener, unblocking Accept. If the connection has not
// been accepted yet, it is closed too.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		c := l.c
		l.c = nil
		close(l.closed)
		l.mu.Unlock()
		if c != nil {
			c.Close()
		}
	})
	return nil
}

// Addr returns the address of the logical connection.
func (l *listener) Addr() net.Addr { return l.addr }
