package mux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// Tests of the bounds added to the mux: write timeout, per-frame trunk
// lock, read queue bytes, pending bytes and WithConnIDs.

// smallSendBuffer shrinks the kernel send buffer of a unix trunk end, so
// that a write of a few hundred KiB blocks until the peer reads, whatever
// the machine's default socket buffer size.
func smallSendBuffer(tb testing.TB, c net.Conn) {
	tb.Helper()
	if err := c.(*net.UnixConn).SetWriteBuffer(32 << 10); err != nil {
		tb.Fatal(err)
	}
}

// pattern returns n bytes that differ from one offset to the next, seeded
// by seed, so that a misplaced or lost byte is noticed.
func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i) + byte(i>>8)*7
	}
	return b
}

// startConn is a trunk that signals when the first write on it starts.
type startConn struct {
	net.Conn
	started chan struct{}
	once    sync.Once
}

func newStartConn(c net.Conn) *startConn {
	return &startConn{Conn: c, started: make(chan struct{})}
}

func (c *startConn) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.started) })
	return c.Conn.Write(p)
}

type writeResult struct {
	n       int
	err     error
	elapsed time.Duration
}

// goWrite writes p on c in a new goroutine and reports the result and how
// long the Write took.
func goWrite(c net.Conn, p []byte) <-chan writeResult {
	ch := make(chan writeResult, 1)
	go func() {
		start := time.Now()
		n, err := c.Write(p)
		ch <- writeResult{n, err, time.Since(start)}
	}()
	return ch
}

func waitWrite(tb testing.TB, ch <-chan writeResult) writeResult {
	tb.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		tb.Fatal("Write did not return")
		return writeResult{}
	}
}

// checkTimedOut checks that a write the write timeout d ended took at
// least d (it did not give up early) and at most 1.25 d, as
// WithWriteTimeout promises, plus the time the machine took to run the
// writer again once the deadline passed: up to d on a quiet machine,
// stretched by the load (testscale). That the timeout, and not the
// writer it waited for, ended the write is shown by the order of events
// (that writer is still blocked), not by this bound.
func checkTimedOut(tb testing.TB, what string, elapsed, d time.Duration) {
	tb.Helper()
	if bound := d + testscale.D(d); elapsed < d || elapsed > bound {
		tb.Errorf("%s returned after %v, want between the write timeout %v and %v", what, elapsed, d, bound)
	}
}

func waitClosed(tb testing.TB, ch <-chan struct{}, what string) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		tb.Fatalf("%s did not happen", what)
	}
}

func isDone(m *Mux) bool {
	select {
	case <-m.Done():
		return true
	default:
		return false
	}
}

// readFrameErr reads one frame from the raw peer end of a trunk, in
// chunks of at most chunk bytes, pausing before each (a slow reader).
func readFrameErr(raw net.Conn, chunk int, pause time.Duration) (ConnID, []byte, error) {
	raw.SetReadDeadline(time.Now().Add(timeout))
	defer raw.SetReadDeadline(time.Time{})
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(raw, hdr[:]); err != nil {
		return 0, nil, err
	}
	payload := make([]byte, binary.BigEndian.Uint32(hdr[4:8]))
	for read := 0; read < len(payload); {
		time.Sleep(pause)
		n, err := io.ReadFull(raw, payload[read:min(read+chunk, len(payload))])
		if err != nil {
			return 0, nil, err
		}
		read += n
	}
	return ConnID(binary.BigEndian.Uint32(hdr[0:4])), payload, nil
}

func readFrame(tb testing.TB, raw net.Conn, chunk int, pause time.Duration) (ConnID, []byte) {
	tb.Helper()
	id, p, err := readFrameErr(raw, chunk, pause)
	if err != nil {
		tb.Fatalf("reading a frame from the trunk: %v", err)
	}
	return id, p
}

// TestWriteTimeoutPeerNeverReads: a peer that never reads cannot hold a
// writer longer than the write timeout. The write cut part way fails the
// mux; a write on the other logical connection, waiting for the trunk,
// returns within the bound too.
func TestWriteTimeoutPeerNeverReads(t *testing.T) {
	const wt = 200 * time.Millisecond
	a, _ := unixPair(t) // the peer end is never read
	trunk := newStartConn(a)
	m := newMux(t, trunk, WithWriteTimeout(wt))
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	r1 := goWrite(c1, make([]byte, 8<<20))
	// Conn 1 holds the trunk; conn 2 now waits for it.
	waitClosed(t, trunk.started, "the first trunk write")
	r2 := goWrite(c2, make([]byte, 1<<20))

	res1 := waitWrite(t, r1)
	checkTimedOut(t, "8 MiB Write on conn 1", res1.elapsed, wt)
	if res1.err == nil || res1.n == 8<<20 {
		t.Fatalf("8 MiB Write to a peer that never reads = %d, %v", res1.n, res1.err)
	}
	waitDone(t, m) // cut part way: the mux fails
	merr := m.Err()
	if !errors.Is(merr, os.ErrDeadlineExceeded) || !strings.Contains(merr.Error(), "write deadline") {
		t.Errorf("Err = %v, want the write deadline as cause", merr)
	}
	if !errors.Is(res1.err, os.ErrDeadlineExceeded) && !strings.Contains(res1.err.Error(), "write deadline") {
		t.Errorf("conn 1 Write error = %v", res1.err)
	}

	// Conn 2 fails with the mux, at conn 1's deadline, before its own.
	res2 := waitWrite(t, r2)
	if bound := wt + testscale.D(wt); res2.elapsed > bound {
		t.Errorf("Write on conn 2 returned after %v, want at most %v (write timeout %v)", res2.elapsed, bound, wt)
	}
	if res2.err == nil || !errors.Is(res2.err, os.ErrDeadlineExceeded) && !errors.Is(res2.err, net.ErrClosed) {
		t.Errorf("conn 2 Write = %d, %v; want a deadline or closed error", res2.n, res2.err)
	}
	// Later writes fail at once.
	if _, err := c2.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after the failure = %v", err)
	}
}

// TestWriteTimeoutNothingSent: writers that cannot start within the write
// timeout, because the conn's write lock or the trunk is held by a writer
// blocked on the trunk, fail with os.ErrDeadlineExceeded, send nothing and
// leave the mux running. The blocked writer started without a timeout
// (SetWriteTimeout affects later writes only) and completes once the peer
// reads.
func TestWriteTimeoutNothingSent(t *testing.T) {
	const wt = 150 * time.Millisecond
	a, raw := unixPair(t)
	smallSendBuffer(t, a)
	trunk := newStartConn(a)
	m := newMux(t, trunk)
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	big := pattern(1, 1<<20)
	rA := goWrite(c1, big) // no timeout: blocks until the peer reads
	waitClosed(t, trunk.started, "the first trunk write")
	m.SetWriteTimeout(wt)

	// Same conn: waits for the conn's write lock.
	rB := goWrite(c1, []byte("BBBB"))
	// Other conn: waits for the trunk.
	rC := goWrite(c2, []byte("CCCC"))
	for name, ch := range map[string]<-chan writeResult{"same conn": rB, "other conn": rC} {
		r := waitWrite(t, ch)
		if !errors.Is(r.err, os.ErrDeadlineExceeded) || r.n != 0 {
			t.Errorf("%s: Write = %d, %v; want 0, os.ErrDeadlineExceeded", name, r.n, r.err)
		}
		var ne net.Error
		if !errors.As(r.err, &ne) || !ne.Timeout() {
			t.Errorf("%s: Write error %v is not a net.Error timeout", name, r.err)
		}
		checkTimedOut(t, name+": Write", r.elapsed, wt)
	}
	if isDone(m) || m.Err() != nil {
		t.Fatalf("mux failed by a write that sent nothing: %v", m.Err())
	}
	select {
	case r := <-rA:
		t.Fatalf("the write without timeout returned early: %d, %v", r.n, r.err)
	default:
	}

	// The peer reads: the blocked write completes, and nothing of the
	// timed-out writes is on the wire.
	m.SetWriteTimeout(0)
	var got []byte
	for len(got) < len(big) {
		id, p := readFrame(t, raw, 64<<10, 0)
		if id != PluginServiceConn {
			t.Fatalf("frame for conn %d (%q) on the wire", id, p[:min(len(p), 8)])
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("conn 1 data corrupted")
	}
	if r := waitWrite(t, rA); r.err != nil || r.n != len(big) {
		t.Fatalf("blocked Write = %d, %v", r.n, r.err)
	}
	mustWrite(t, c2, []byte("after"))
	if id, p := readFrame(t, raw, 64<<10, 0); id != RuntimeServiceConn || string(p) != "after" {
		t.Fatalf("next frame = conn %d %q, want conn 2 \"after\"", id, p)
	}
	if m.Err() != nil {
		t.Fatalf("Err = %v", m.Err())
	}
}

// TestSetWriteTimeout: SetWriteTimeout replaces the timeout for later
// writes; 0 disables it, so a peer slower than the old timeout is waited
// for.
func TestSetWriteTimeout(t *testing.T) {
	const (
		oldTimeout = 50 * time.Millisecond
		newTimeout = 200 * time.Millisecond
	)
	a, raw := unixPair(t)
	smallSendBuffer(t, a)
	m := newMux(t, a, WithWriteTimeout(oldTimeout))
	c := open(t, m, PluginServiceConn)

	// Disabled: a slow but reading peer takes 4 MiB in well over the old
	// timeout, and the write succeeds.
	m.SetWriteTimeout(0)
	payload := pattern(2, 4<<20)
	peer := make(chan []byte, 1)
	go func() {
		time.Sleep(3 * oldTimeout)
		var got []byte
		for len(got) < len(payload) {
			_, p, err := readFrameErr(raw, 256<<10, time.Millisecond)
			if err != nil {
				break
			}
			got = append(got, p...)
		}
		peer <- got
	}()
	start := time.Now()
	if n, err := c.Write(payload); err != nil || n != len(payload) {
		t.Fatalf("Write with the timeout disabled = %d, %v", n, err)
	}
	if d := time.Since(start); d < 2*oldTimeout {
		t.Fatalf("the write took %v: the test did not outlast the old timeout", d)
	}
	if got := <-peer; !bytes.Equal(got, payload) {
		t.Fatal("data corrupted")
	}

	// Set again: the new value bounds the next write (not the old one).
	m.SetWriteTimeout(newTimeout)
	start = time.Now()
	n, err := c.Write(payload) // the peer no longer reads
	d := time.Since(start)
	if err == nil || n == len(payload) {
		t.Fatalf("Write to a peer that stopped reading = %d, %v", n, err)
	}
	checkTimedOut(t, "Write with the new timeout", d, newTimeout)
	waitDone(t, m)
	if !strings.Contains(m.Err().Error(), "write deadline") {
		t.Errorf("Err = %v", m.Err())
	}
}

// TestFramesInterleave: the trunk is held one frame at a time, so a small
// write on conn 2 goes out between the frames of a long write on conn 1
// and completes first.
func TestFramesInterleave(t *testing.T) {
	const frameSize = 512 << 10
	a, raw := unixPair(t)
	smallSendBuffer(t, a)
	trunk := newStartConn(a)
	m := newMux(t, trunk, WithMaxPayload(frameSize))
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	long := pattern(3, 4*frameSize)
	r1 := goWrite(c1, long)
	// Conn 1's first frame is going out: start the conn 2 write.
	waitClosed(t, trunk.started, "the first trunk write")
	r2 := goWrite(c2, []byte("small"))

	// Read slowly (at least 64 ms a frame) until the conn 2 frame shows
	// up, then stop reading.
	var got []byte
	var order []ConnID
	for {
		id, p := readFrame(t, raw, 16<<10, 2*time.Millisecond)
		order = append(order, id)
		if id == RuntimeServiceConn {
			if string(p) != "small" {
				t.Fatalf("conn 2 frame %q", p)
			}
			break
		}
		if id != PluginServiceConn || len(p) != frameSize {
			t.Fatalf("frame for conn %d of %d bytes", id, len(p))
		}
		got = append(got, p...)
		if len(got) == len(long) {
			t.Fatalf("conn 2 frame not sent between the frames of conn 1: order %v", order)
		}
	}
	if len(got) == 0 {
		t.Fatalf("conn 2 frame before conn 1's first frame: order %v", order)
	}
	// The conn 2 write completes while conn 1's is still waiting for the
	// peer (a whole frame of it is still unread).
	if r := waitWrite(t, r2); r.err != nil {
		t.Fatalf("conn 2 Write: %v", r.err)
	}
	select {
	case r := <-r1:
		t.Fatalf("conn 1 Write finished before the peer read it: %d, %v", r.n, r.err)
	default:
	}
	for len(got) < len(long) {
		id, p := readFrame(t, raw, 64<<10, 0)
		if id != PluginServiceConn {
			t.Fatalf("unexpected frame for conn %d", id)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, long) {
		t.Fatal("conn 1 data corrupted")
	}
	if r := waitWrite(t, r1); r.err != nil || r.n != len(long) {
		t.Fatalf("conn 1 Write = %d, %v", r.n, r.err)
	}
	t.Logf("frame order: %v", order)
}

// queuedBytes returns the payload bytes queued on c (white box).
func queuedBytes(c net.Conn) int {
	return int(c.(*conn).queued.Load())
}

// expectNoData checks that nothing can be read from c for d.
func expectNoData(t *testing.T, c net.Conn, d time.Duration, why string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	if n, err := c.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: Read = %d, %v; want nothing delivered", why, n, err)
	}
}

// TestReadQueueBytes: a logical connection holds at most the byte bound
// of unread frames; then the trunk reader waits (backpressure on the
// whole trunk) and nothing is lost once reading resumes. A frame larger
// than the bound passes when the queue is empty.
func TestReadQueueBytes(t *testing.T) {
	const bound = 1 << 10
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueBytes(bound))
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	var want1, stream bytes.Buffer
	for i := range 3 { // 1200 bytes: the third frame does not fit
		p := pattern(byte(10+i), 400)
		want1.Write(p)
		stream.Write(frame(1, p))
	}
	want2 := []byte("marker")
	stream.Write(frame(2, want2))
	mustWrite(t, raw, stream.Bytes())

	// The peer keeps writing for conn 2: big frames (each over the bound)
	// the trunk reader does not take while it waits for room on conn 1.
	var bulk bytes.Buffer
	for i := range 16 {
		p := pattern(byte(20+i), 64<<10)
		want2 = append(want2, p...)
		bulk.Write(frame(2, p))
	}
	peerBlocked := make(chan error, 1)
	go func() {
		raw.SetWriteDeadline(time.Now().Add(150 * time.Millisecond))
		n, err := raw.Write(bulk.Bytes())
		raw.SetWriteDeadline(time.Time{})
		peerBlocked <- err
		if err == nil {
			return
		}
		_, err = raw.Write(bulk.Bytes()[n:]) // keep the stream framed
		peerBlocked <- err
	}()
	expectNoData(t, c2, 150*time.Millisecond, "conn 2 while conn 1's queue is full")
	if err := <-peerBlocked; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the peer wrote 1 MiB while the trunk reader should wait: %v", err)
	}
	if q := queuedBytes(c1); q > bound || q == 0 {
		t.Fatalf("conn 1 holds %d bytes, bound %d", q, bound)
	}

	// Resume reading: everything arrives, in order.
	got2 := make(chan []byte, 1)
	go func() {
		c2.SetReadDeadline(time.Now().Add(timeout))
		b := make([]byte, len(want2))
		n, _ := io.ReadFull(c2, b)
		got2 <- b[:n]
	}()
	if got := readN(t, c1, want1.Len()); !bytes.Equal(got, want1.Bytes()) {
		t.Fatal("conn 1 data lost or corrupted")
	}
	if got := <-got2; !bytes.Equal(got, want2) {
		t.Fatalf("conn 2 got %d of %d bytes, or corrupted", len(got), len(want2))
	}
	if err := <-peerBlocked; err != nil {
		t.Fatal(err)
	}

	// A frame larger than the bound waits while the queue is not empty,
	// and passes once it is.
	large := pattern(40, 5000)
	mustWrite(t, raw, append(append(frame(1, []byte("0123456789")), frame(1, large)...), frame(2, []byte("m2"))...))
	expectNoData(t, c2, 100*time.Millisecond, "conn 2 while a large frame waits for conn 1")
	if got := readN(t, c1, 10); string(got) != "0123456789" {
		t.Fatalf("got %q", got)
	}
	if got := readN(t, c2, 2); string(got) != "m2" {
		t.Fatalf("got %q", got)
	}
	if got := readN(t, c1, len(large)); !bytes.Equal(got, large) {
		t.Fatal("large frame corrupted")
	}
	if m.Err() != nil {
		t.Fatalf("Err = %v", m.Err())
	}
}

// TestMaxPendingBytes: frames for connections not opened yet are buffered
// up to the byte bound, over all IDs, and delivered on Open; beyond the
// bound the mux fails.
func TestMaxPendingBytes(t *testing.T) {
	const bound = 100
	t.Run("within", func(t *testing.T) {
		a, raw := unixPair(t)
		m := newMux(t, a, WithMaxPendingBytes(bound))
		c1 := open(t, m, PluginServiceConn)
		p5, p6, p7 := pattern(5, 60), pattern(6, 40), pattern(7, bound)
		mustWrite(t, raw, append(append(frame(5, p5), frame(6, p6)...), frame(1, []byte("sync"))...))
		readN(t, c1, 4) // frames are dispatched in order: 5 and 6 are buffered
		if got := readN(t, open(t, m, 5), len(p5)); !bytes.Equal(got, p5) {
			t.Fatalf("conn 5 got %q", got)
		}
		if got := readN(t, open(t, m, 6), len(p6)); !bytes.Equal(got, p6) {
			t.Fatalf("conn 6 got %q", got)
		}
		// Open gave the bytes back.
		mustWrite(t, raw, append(frame(7, p7), frame(1, []byte("sync"))...))
		readN(t, c1, 4)
		if got := readN(t, open(t, m, 7), len(p7)); !bytes.Equal(got, p7) {
			t.Fatalf("conn 7 got %q", got)
		}
		if m.Err() != nil {
			t.Fatalf("Err = %v", m.Err())
		}
	})
	t.Run("beyond", func(t *testing.T) {
		a, raw := unixPair(t)
		m := newMux(t, a, WithMaxPendingBytes(bound))
		c1 := open(t, m, PluginServiceConn)
		mustWrite(t, raw, append(frame(5, pattern(5, 60)), frame(6, pattern(6, bound-60+1))...))
		waitDone(t, m)
		err := m.Err()
		if err == nil || !strings.Contains(err.Error(), fmt.Sprint(bound)) || !strings.Contains(err.Error(), "conn 6") {
			t.Fatalf("Err = %v, want the pending byte bound %d", err, bound)
		}
		if _, rerr := c1.Read(make([]byte, 1)); rerr == nil || rerr == io.EOF || !strings.Contains(rerr.Error(), fmt.Sprint(bound)) {
			t.Fatalf("Read after the failure = %v", rerr)
		}
	})
}

// TestConnIDs: with WithConnIDs, frames for other IDs fail the mux with
// an *UnknownConnError, frames for ID 0 are discarded, and Open and Listen
// refuse other IDs.
func TestConnIDs(t *testing.T) {
	a, raw := unixPair(t)
	ids := []ConnID{PluginServiceConn, RuntimeServiceConn}
	m := newMux(t, a, WithConnIDs(ids...))
	ids[0] = 3 // the option keeps its own copy
	if _, err := m.Open(3); err == nil {
		t.Error("Open(3) succeeded")
	}
	if _, err := m.Listen(3); err == nil {
		t.Error("Listen(3) succeeded")
	}
	c1 := open(t, m, PluginServiceConn)

	// ID 0 discarded; ID 2 not open yet, buffered.
	mustWrite(t, raw, append(append(frame(0, []byte("zero")), frame(2, []byte("early"))...), frame(1, []byte("one"))...))
	if got := readN(t, c1, 3); string(got) != "one" {
		t.Fatalf("got %q", got)
	}
	if m.Err() != nil {
		t.Fatalf("mux failed: %v", m.Err())
	}
	if got := readN(t, open(t, m, RuntimeServiceConn), 5); string(got) != "early" {
		t.Fatalf("got %q", got)
	}

	mustWrite(t, raw, frame(3, []byte("three")))
	waitDone(t, m)
	var ue *UnknownConnError
	if !errors.As(m.Err(), &ue) || ue.Conn != 3 {
		t.Fatalf("Err = %v, want *UnknownConnError for conn 3", m.Err())
	}
	if _, err := c1.Read(make([]byte, 1)); !errors.As(err, &ue) {
		t.Fatalf("Read after the failure = %v", err)
	}
}

func TestBoundOptionsValidation(t *testing.T) {
	a, _ := unixPair(t)
	for name, o := range map[string]Option{
		"no conn IDs":            WithConnIDs(),
		"reserved conn ID":       WithConnIDs(1, ReservedConn),
		"negative write timeout": WithWriteTimeout(-time.Nanosecond),
		"zero read queue bytes":  WithReadQueueBytes(0),
		"negative queue bytes":   WithReadQueueBytes(-1),
		"zero pending bytes":     WithMaxPendingBytes(0),
		"negative pending bytes": WithMaxPendingBytes(-1),
	} {
		if m, err := New(a, o); err == nil {
			m.Close()
			t.Errorf("New accepted an invalid option: %s", name)
		}
	}
	m, err := New(a, WithWriteTimeout(0), WithReadQueueBytes(1), WithMaxPendingBytes(1), WithConnIDs(7))
	if err != nil {
		t.Fatalf("New with the smallest valid values: %v", err)
	}
	m.Close()
}

// cutHookConn is a trunk that, when a write on it fails, holds the mux's
// lock for a while (as if the failing writer were descheduled before it
// could record the failure) and counts the trunk writes started after the
// failure.
type cutHookConn struct {
	net.Conn
	m *Mux

	started chan struct{}
	once    sync.Once

	mu       sync.Mutex
	failed   bool
	afterCut int
	holding  bool
}

func (c *cutHookConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.holding = false
		c.m.mu.Unlock()
	}
}

func (c *cutHookConn) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.started) })
	c.mu.Lock()
	if c.failed {
		c.afterCut++
	}
	c.mu.Unlock()
	c.release()
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	if err != nil && !c.failed {
		c.failed = true
		c.m.mu.Lock()
		c.holding = true
		time.AfterFunc(100*time.Millisecond, c.release)
	}
	c.mu.Unlock()
	return n, err
}

// TestNoFrameAfterCut: once a frame was cut on the trunk (its writer's
// deadline passed part way), nothing else may be written to the trunk: the
// stream is no longer framed, and the bytes of another connection's frame
// would be read by the peer as the rest of the cut frame, which could then
// be delivered, corrupted, on the cut connection.
//
// A hook in the trunk widens the window between the failed frame write
// and the mux's failure, in which a waiting writer would get the trunk
// if the lock were released first.
func TestNoFrameAfterCut(t *testing.T) {
	a, _ := unixPair(t) // the peer end is never read
	trunk := &cutHookConn{Conn: a, started: make(chan struct{})}
	m := newMux(t, trunk)
	trunk.m = m
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	c1.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	r1 := goWrite(c1, make([]byte, 1<<20))
	waitClosed(t, trunk.started, "the first trunk write")
	r2 := goWrite(c2, []byte("other")) // no deadline: waits for the trunk
	res1, res2 := waitWrite(t, r1), waitWrite(t, r2)
	waitDone(t, m)
	trunk.release()
	trunk.mu.Lock()
	defer trunk.mu.Unlock()
	if trunk.afterCut > 0 {
		t.Errorf("%d trunk writes after conn 1's frame was cut (conn 1: %v; conn 2: %v)", trunk.afterCut, res1.err, res2.err)
	}
}

// TestSetReadLimit: a frame above the read limit fails the mux on its
// header, whatever the maximum payload; restoring the limit accepts
// large frames again.
func TestSetReadLimit(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	m.SetReadLimit(100)
	c1 := open(t, m, PluginServiceConn)
	mustWrite(t, raw, frame(1, make([]byte, 100)))
	readN(t, c1, 100)
	// Only the header: the mux must not wait for the payload.
	mustWrite(t, raw, header(1, 101))
	waitDone(t, m)
	var tooLarge *FrameTooLargeError
	if err := m.Err(); !errors.As(err, &tooLarge) || tooLarge.Max != 100 || tooLarge.Size != 101 {
		t.Fatalf("Err = %v", err)
	}

	b, raw2 := unixPair(t)
	m2 := newMux(t, b)
	m2.SetReadLimit(10)
	m2.SetReadLimit(1 << 30) // capped at the maximum payload
	c := open(t, m2, PluginServiceConn)
	mustWrite(t, raw2, frame(1, make([]byte, 64<<10)))
	readN(t, c, 64<<10)
}

// TestUnknownConnRefusedOnHeader: with WithConnIDs, a frame for another
// ID fails the mux on its header, before its payload is read.
func TestUnknownConnRefusedOnHeader(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithConnIDs(PluginServiceConn, RuntimeServiceConn))
	mustWrite(t, raw, header(3, 4<<20)) // the payload never comes
	waitDone(t, m)
	var unknown *UnknownConnError
	if err := m.Err(); !errors.As(err, &unknown) || unknown.Conn != 3 {
		t.Fatalf("Err = %v", err)
	}
}
