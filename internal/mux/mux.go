package mux

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ConnID identifies a logical connection on the trunk. It is the first field
// of every frame header.
type ConnID uint32

const (
	// ReservedConn is never used for a logical connection; Open and Listen
	// reject it, and frames received for it are discarded.
	ReservedConn ConnID = 0
	// PluginServiceConn carries NRI's Plugin service: the runtime is the
	// ttrpc client, the plugin is the server.
	PluginServiceConn ConnID = 1
	// RuntimeServiceConn carries NRI's Runtime service: the plugin is the
	// ttrpc client, the runtime is the server.
	RuntimeServiceConn ConnID = 2
)

// HeaderSize is the size in bytes of a frame header: a big-endian uint32
// connection ID followed by a big-endian uint32 payload length.
const HeaderSize = 8

// DefaultMaxPayload is the default maximum frame payload size: ttrpc's
// 10-byte message header plus its 4 MiB maximum message size. It matches
// containerd/nri, so larger frames are never produced by a conforming peer.
const DefaultMaxPayload = 10 + 4<<20

// DefaultReadQueueLength is the default number of frames buffered per logical
// connection; see WithReadQueueLength.
const DefaultReadQueueLength = 256

// DefaultReadQueueBytes is the default number of payload bytes buffered per
// logical connection; see WithReadQueueBytes. A frame larger than this is
// still taken when nothing else is buffered, so a connection holds at most
// max(DefaultReadQueueBytes, one frame) of unread data.
const DefaultReadQueueBytes = 1 << 20

// DefaultMaxPendingBytes is the default number of payload bytes buffered,
// over all connection IDs, for connections that are not open yet; see
// WithMaxPendingBytes.
const DefaultMaxPendingBytes = DefaultMaxPayload

const (
	// maxMaxPayload keeps payload sizes representable as int on 32-bit
	// platforms.
	maxMaxPayload = math.MaxInt32
	// maxReadQueueLength bounds the per-connection channel allocation.
	maxReadQueueLength = 1 << 16
	// trunkBufferSize is the size of the trunk read buffer, so that small
	// frames (header and payload) cost a single read system call; a
	// larger payload is read into its own buffer directly. It is kept
	// small because every plugin's trunk has one, live for the
	// connection's life, in the runtime and in the plugin: at 64 KiB, 16
	// plugins held 1 MiB of the runtime's live heap (and raised the
	// garbage collector's goal by as much).
	trunkBufferSize = 16 << 10
)

// ErrClosed is the value of Err after the Mux was closed locally with Close.
var ErrClosed = errors.New("mux: closed")

// FrameTooLargeError is the cause of a mux failure when a received frame
// header announces a payload larger than the configured maximum. The mux
// detects this before allocating or reading the payload.
type FrameTooLargeError struct {
	// Conn is the connection ID in the offending header.
	Conn ConnID
	// Size is the payload length announced by the header.
	Size uint32
	// Max is the maximum payload length the reader accepts.
	Max uint32
}

// Error implements the error interface.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("mux: conn %d: frame payload %d bytes exceeds maximum %d", e.Conn, e.Size, e.Max)
}

type config struct {
	maxPayload   int
	queueLen     int
	queueBytes   int
	pendingBytes int
	connIDs      []ConnID // nil: any
	writeTimeout time.Duration
}

// Option configures a Mux created with New. Options validate their argument
// and make New fail for an invalid value.
type Option func(*config) error

// WithMaxPayload sets the maximum frame payload size, in bytes. Writes are
// split into frames of at most n bytes, and a received frame announcing more
// than n bytes fails the mux with a *FrameTooLargeError. Both ends of a trunk
// must agree; the default, DefaultMaxPayload, matches containerd/nri. n must
// be between 1 and math.MaxInt32.
func WithMaxPayload(n int) Option {
	return func(c *config) error {
		if n < 1 || n > maxMaxPayload {
			return fmt.Errorf("mux: invalid max payload %d: must be between 1 and %d", n, maxMaxPayload)
		}
		c.maxPayload = n
		return nil
	}
}

// WithReadQueueLength sets how many received frames are buffered per
// logical connection before the trunk reader blocks until the connection is
// read (backpressure; this stalls every logical connection of the trunk). It
// also bounds the frames buffered for a connection ID that has not been
// opened yet; exceeding that bound fails the mux. The default is
// DefaultReadQueueLength; n must be between 1 and 65536.
func WithReadQueueLength(n int) Option {
	return func(c *config) error {
		if n < 1 || n > maxReadQueueLength {
			return fmt.Errorf("mux: invalid read queue length %d: must be between 1 and %d", n, maxReadQueueLength)
		}
		c.queueLen = n
		return nil
	}
}

// WithReadQueueBytes sets how many payload bytes are buffered per logical
// connection before the trunk reader blocks until the connection is read
// (backpressure, as with WithReadQueueLength; a single frame larger than
// n is still taken when nothing is buffered). With the read queue length
// it bounds the memory a peer can make one logical connection hold. The
// default is DefaultReadQueueBytes; n must be positive.
func WithReadQueueBytes(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("mux: invalid read queue bytes %d: must be positive", n)
		}
		c.queueBytes = n
		return nil
	}
}

// WithMaxPendingBytes bounds the payload bytes buffered, over all
// connection IDs, for connections that have not been opened yet; a frame
// that would exceed it fails the mux. The default is
// DefaultMaxPendingBytes; n must be positive.
func WithMaxPendingBytes(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("mux: invalid max pending bytes %d: must be positive", n)
		}
		c.pendingBytes = n
		return nil
	}
}

// WithConnIDs restricts the trunk to the given connection IDs: a frame
// for any other ID (except ReservedConn, whose frames are always
// discarded) fails the mux at once with an *UnknownConnError, and Open and
// Listen refuse other IDs. NRI uses PluginServiceConn and
// RuntimeServiceConn only. Without this option every ID is accepted and
// frames for IDs not open yet are buffered (see MaxPendingConns).
func WithConnIDs(ids ...ConnID) Option {
	return func(c *config) error {
		if len(ids) == 0 {
			return errors.New("mux: WithConnIDs needs at least one connection ID")
		}
		if slices.Contains(ids, ReservedConn) {
			return fmt.Errorf("mux: connection ID %d is reserved", ReservedConn)
		}
		c.connIDs = slices.Clone(ids)
		return nil
	}
}

// WithWriteTimeout bounds every write on a logical connection: a write
// that has not been taken in by the trunk within d fails (within d to
// 1.25 d: the trunk's deadline is not reset for every frame). A write that
// times out before any of it was sent returns an error satisfying
// errors.Is(err, os.ErrDeadlineExceeded) and leaves the mux running; one
// that times out part way fails the whole mux (a frame cannot be taken
// back, so the stream would no longer be framed). This is what keeps a
// peer that stops reading from blocking its writers forever. The default
// is no timeout; d must not be negative (0 disables it). See also
// Mux.SetWriteTimeout and conn.SetWriteDeadline.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("mux: invalid write timeout %v: must not be negative", d)
		}
		c.writeTimeout = d
		return nil
	}
}

// UnknownConnError is the cause of a mux failure when a frame arrives for
// a connection ID outside those given to WithConnIDs.
type UnknownConnError struct {
	// Conn is the connection ID in the offending header.
	Conn ConnID
}

// Error implements the error interface.
func (e *UnknownConnError) Error() string {
	return fmt.Sprintf("mux: frame for connection %d, which this trunk does not use", e.Conn)
}

// Mux multiplexes logical connections over a trunk connection. Its methods
// are safe for concurrent use.
type Mux struct {
	trunk net.Conn
	cfg   config

	// closing is closed as soon as shutdown starts (local Close, trunk
	// failure or write failure); it unblocks the reader and the writers.
	closing     chan struct{}
	closingOnce sync.Once
	// done is closed by the reader goroutine when it exits, after err is
	// set. No frame is queued after done is closed.
	done chan struct{}

	mu           sync.Mutex
	err          error               // cause of the shutdown; set once
	conns        map[ConnID]*conn    // open logical connections
	pending      map[ConnID][][]byte // frames received before Open
	pendingBytes int                 // payload bytes in pending
	retired      map[ConnID]struct{} // opened, then closed locally

	// writeTimeout is the current write timeout in nanoseconds (0: none).
	writeTimeout atomic.Int64
	// readLimit is the largest frame payload the reader accepts now (see
	// SetReadLimit).
	readLimit atomic.Int64
	// tlock is the trunk write lock (a one-slot semaphore, so that
	// waiting for it can be bounded): it is held for one frame at a
	// time, so the frames of writes on different logical connections
	// interleave and a long write does not hold the others up for its
	// whole length. The fields below it are guarded by it.
	tlock   chan struct{}
	trunkDL time.Time // the write deadline last set on the trunk
	whdr    [HeaderSize]byte
	wbufs   [2][]byte
	// wvec is wbufs as the net.Buffers of one write: a field, so that
	// writing it (WriteTo takes its address) does not allocate.
	wvec net.Buffers
}

// New wraps trunk in a Mux and starts its reader goroutine. The Mux takes
// ownership of trunk: it is closed by Close or when the Mux fails. Frames
// received for connection IDs that are not open yet are buffered until they
// are opened with Open or Listen.
func New(trunk net.Conn, opts ...Option) (*Mux, error) {
	if trunk == nil {
		return nil, errors.New("mux: nil trunk connection")
	}
	cfg := config{maxPayload: DefaultMaxPayload, queueLen: DefaultReadQueueLength,
		queueBytes: DefaultReadQueueBytes, pendingBytes: DefaultMaxPendingBytes}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("mux: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	m := &Mux{
		trunk:   trunk,
		cfg:     cfg,
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		conns:   make(map[ConnID]*conn),
		pending: make(map[ConnID][][]byte),
		retired: make(map[ConnID]struct{}),
		tlock:   make(chan struct{}, 1),
	}
	m.writeTimeout.Store(int64(cfg.writeTimeout))
	m.readLimit.Store(int64(cfg.maxPayload))
	go m.reader()
	return m, nil
}

// SetWriteTimeout changes the write timeout (see WithWriteTimeout) for
// the writes that start afterwards; 0 disables it, a negative d is taken
// as 0.
func (m *Mux) SetWriteTimeout(d time.Duration) { m.writeTimeout.Store(int64(max(d, 0))) }

// SetReadLimit lowers (or restores) the largest frame payload the reader
// accepts from now on: a frame announcing more fails the mux with a
// *FrameTooLargeError, before anything is allocated for it. n is capped
// at the maximum payload (WithMaxPayload), which is also the initial
// limit; n < 1 is taken as 1. A side that expects only small messages
// for a while (a runtime before a plugin has registered) uses it to bound
// what a peer can make it allocate.
func (m *Mux) SetReadLimit(n int) { m.readLimit.Store(int64(min(max(n, 1), m.cfg.maxPayload))) }

// Trunk returns the underlying trunk connection. Writing to or reading from
// it directly corrupts the framing.
func (m *Mux) Trunk() net.Conn { return m.trunk }

// Done returns a channel that is closed once the Mux has shut down, after a
// local Close or a trunk failure, and its reader goroutine has exited.
func (m *Mux) Done() <-chan struct{} { return m.done }

// Err returns nil while the Mux is running. Once Done is closed it returns
// the cause of the shutdown: ErrClosed after a local Close, otherwise an
// error describing the trunk failure, which wraps the underlying error (for
// example io.EOF when the peer closed the trunk cleanly, io.ErrUnexpectedEOF
// for a truncated frame, or a *FrameTooLargeError).
func (m *Mux) Err() error {
	select {
	case <-m.done:
	default:
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close shuts the Mux down: it closes the trunk and all logical connections
// and listeners, and waits for the reader goroutine to exit. Subsequent
// reads on logical connections return the data already queued, then io.EOF.
// Close returns the error from closing the trunk, if any; calling it again,
// or after a trunk failure, returns nil.
func (m *Mux) Close() error {
	err := m.fail(ErrClosed)
	<-m.done
	return err
}

// fail records cause (unless a cause is already recorded), starts the
// shutdown and closes the trunk. It returns the trunk close error if this
// call started the shutdown.
func (m *Mux) fail(cause error) error {
	m.mu.Lock()
	if m.err == nil {
		m.err = cause
	}
	m.mu.Unlock()
	var err error
	m.closingOnce.Do(func() {
		close(m.closing)
		if cerr := m.trunk.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	})
	return err
}

// cause returns the recorded shutdown cause, or nil.
func (m *Mux) cause() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Open returns the logical connection id. It fails if id is ReservedConn, if
// id is already open (by Open or Listen) or was open and closed, or if the
// Mux has shut down. Frames that arrived for id before Open are delivered
// first.
func (m *Mux) Open(id ConnID) (net.Conn, error) {
	c, err := m.open("open", id)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (m *Mux) open(op string, id ConnID) (*conn, error) {
	if id == ReservedConn {
		return nil, fmt.Errorf("mux: %s conn %d: connection ID is reserved", op, id)
	}
	if !m.usable(id) {
		return nil, fmt.Errorf("mux: %s conn %d: connection ID is not used on this trunk", op, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, fmt.Errorf("mux: %s conn %d: %w", op, id, m.err)
	}
	if _, ok := m.conns[id]; ok {
		return nil, fmt.Errorf("mux: %s conn %d: already open", op, id)
	}
	if _, ok := m.retired[id]; ok {
		return nil, fmt.Errorf("mux: %s conn %d: connection was closed and cannot be reopened", op, id)
	}
	c := newConn(m, id)
	// The reader goroutine dispatches under m.mu, so moving the pending
	// frames here preserves their order. There are at most queueLen of
	// them, so this never blocks; their bytes may exceed the connection's
	// byte bound, which only delays the next frame.
	for _, f := range m.pending[id] {
		c.queue <- f
		c.queued.Add(int64(len(f)))
		m.pendingBytes -= len(f)
	}
	delete(m.pending, id)
	m.conns[id] = c
	return c, nil
}

// forget removes a locally closed logical connection; frames received for
// it later are discarded.
func (m *Mux) forget(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns[c.id] == c {
		delete(m.conns, c.id)
		m.retired[c.id] = struct{}{}
	}
}

// Listen opens the logical connection id, like Open, and returns a listener
// whose first Accept returns it. Later Accept calls block until the listener
// is closed or the Mux shuts down, then return an error wrapping
// net.ErrClosed. This lets a ttrpc.Server serve a single logical connection.
// Closing the listener before the connection was accepted closes the
// connection too; once accepted, the connection is independent of the
// listener.
func (m *Mux) Listen(id ConnID) (net.Listener, error) {
	c, err := m.open("listen", id)
	if err != nil {
		return nil, err
	}
	return &listener{m: m, c: c, addr: c.LocalAddr(), closed: make(chan struct{})}, nil
}

// reader is the Mux's single goroutine.
func (m *Mux) reader() {
	defer close(m.done)
	err := m.readLoop()
	m.fail(err)
}

func (m *Mux) readLoop() error {
	br := bufio.NewReaderSize(m.trunk, trunkBufferSize)
	var hdr [HeaderSize]byte
	for {
		if n, err := io.ReadFull(br, hdr[:]); err != nil {
			switch {
			case n == 0 && errors.Is(err, io.EOF):
				return fmt.Errorf("mux: trunk closed by peer: %w", err)
			case errors.Is(err, io.ErrUnexpectedEOF):
				return fmt.Errorf("mux: truncated frame header: read %d of %d bytes: %w", n, HeaderSize, err)
			default:
				return fmt.Errorf("mux: reading frame header from trunk: %w", err)
			}
		}
		id := ConnID(binary.BigEndian.Uint32(hdr[0:4]))
		size := binary.BigEndian.Uint32(hdr[4:8])
		if limit := uint32(m.readLimit.Load()); size > limit {
			return &FrameTooLargeError{Conn: id, Size: size, Max: limit}
		}
		if id != ReservedConn && !m.usable(id) {
			// Refused on the header, before reading the payload.
			return &UnknownConnError{Conn: id}
		}
		if size == 0 {
			continue
		}
		buf := getFrame(int(size))
		if n, err := io.ReadFull(br, buf); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("mux: truncated frame for conn %d: read %d of %d payload bytes: %w", id, n, size, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("mux: conn %d: reading frame payload from trunk: %w", id, err)
		}
		if err := m.dispatch(id, buf); err != nil {
			return err
		}
	}
}

// MaxPendingConns bounds the number of distinct connection IDs whose frames
// are buffered before the connection is opened. NRI uses two IDs, so a
// peer sending frames for more is broken or hostile; without the bound it
// could make the reader buffer frames for up to 2^32 IDs.
const MaxPendingConns = 8

// errShutdown is returned by dispatch when the Mux is shutting down; the
// recorded cause takes precedence over it.
var errShutdown = errors.New("mux: shutting down")

// usable reports whether id may carry frames on this trunk (see
// WithConnIDs).
func (m *Mux) usable(id ConnID) bool {
	return m.cfg.connIDs == nil || slices.Contains(m.cfg.connIDs, id)
}

// dispatch hands a frame to its connection. The reader has already refused
// frames for IDs the trunk does not use (see readLoop).
func (m *Mux) dispatch(id ConnID, frame []byte) error {
	if id == ReservedConn {
		return nil
	}
	m.mu.Lock()
	c, ok := m.conns[id]
	if !ok {
		defer m.mu.Unlock()
		if _, ok := m.retired[id]; ok {
			return nil
		}
		q, known := m.pending[id]
		if !known && len(m.pending) >= MaxPendingConns {
			return fmt.Errorf("mux: conn %d: frames for more than %d connections that were never opened", id, MaxPendingConns)
		}
		if len(q) >= m.cfg.queueLen {
			return fmt.Errorf("mux: conn %d: more than %d frames received before the conn was opened (read queue length exceeded)", id, m.cfg.queueLen)
		}
		if m.pendingBytes+len(frame) > m.cfg.pendingBytes {
			return fmt.Errorf("mux: conn %d: more than %d bytes received for connections that were not opened", id, m.cfg.pendingBytes)
		}
		m.pending[id] = append(q, frame)
		m.pendingBytes += len(frame)
		return nil
	}
	m.mu.Unlock()
	return c.enqueue(frame)
}

// write sends p on connection c, split into frames of at most maxPayload
// bytes. Writes on one logical connection are serialised (c.wlock), so
// their bytes never interleave; the trunk is held one frame at a time.
// Every wait and the trunk writes are bounded by c's write deadline and
// the mux's write timeout, whichever comes first.
func (m *Mux) write(c *conn, p []byte) (int, error) {
	dl := c.writeDeadline()
	var slack time.Duration // see writeFrame
	if to := time.Duration(m.writeTimeout.Load()); to > 0 {
		if t := time.Now().Add(to); dl.IsZero() || t.Before(dl) {
			dl, slack = t, to/4
		}
	}
	if err := c.acquire(c.wlock, dl); err != nil {
		return 0, err
	}
	defer func() { <-c.wlock }()
	written := 0
	for len(p) > 0 {
		if err := c.acquire(m.tlock, dl); err != nil {
			if written > 0 {
				// Part of p was sent: the logical stream is cut.
				ferr := fmt.Errorf("mux: conn %d: write cut after %d bytes: %w", c.id, written, err)
				m.fail(ferr)
				return written, c.opError("write", ferr)
			}
			return 0, err
		}
		n := min(len(p), m.cfg.maxPayload)
		if err := m.writeFrame(c.id, p[:n], dl, slack); err != nil {
			// A partially written frame leaves the stream unframeable,
			// and trunk write errors are not recoverable anyway: fail
			// the whole mux, before letting go of the trunk, so that no
			// other frame follows the cut one.
			ferr := fmt.Errorf("mux: conn %d: writing frame to trunk: %w", c.id, err)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				ferr = fmt.Errorf("mux: conn %d: peer did not take a frame before the write deadline: %w", c.id, err)
			}
			m.fail(ferr)
			<-m.tlock
			return written, c.opError("write", ferr)
		}
		<-m.tlock
		written += n
		p = p[n:]
	}
	return written, nil
}

// writeFrame writes one frame with deadline dl (zero: none). With slack,
// a deadline between dl and dl+slack will do: the one set for an earlier
// frame is kept while it falls in that range, and a new one is set at
// dl+slack, so that a stream of writes under the mux's write timeout
// resets the trunk's deadline (which costs a timer update each time) at
// most every slack. The caller holds m.tlock.
func (m *Mux) writeFrame(id ConnID, payload []byte, dl time.Time, slack time.Duration) error {
	keep := dl.Equal(m.trunkDL) ||
		(slack > 0 && !m.trunkDL.Before(dl) && !m.trunkDL.After(dl.Add(slack)))
	if !keep {
		target := dl
		if !dl.IsZero() {
			target = dl.Add(slack)
		}
		if err := m.trunk.SetWriteDeadline(target); err != nil && !target.IsZero() {
			return fmt.Errorf("setting the trunk write deadline: %w", err)
		}
		m.trunkDL = target
	}
	binary.BigEndian.PutUint32(m.whdr[0:4], uint32(id))
	binary.BigEndian.PutUint32(m.whdr[4:8], uint32(len(payload)))
	m.wbufs[0], m.wbufs[1] = m.whdr[:], payload
	m.wvec = m.wbufs[:]
	_, err := m.wvec.WriteTo(m.trunk)
	m.wbufs[0], m.wbufs[1], m.wvec = nil, nil, nil
	return err
}
