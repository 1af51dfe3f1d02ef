package mux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestInterleavedFrames(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)

	var want1, want2, stream bytes.Buffer
	for i := 0; i < 100; i++ {
		p1 := []byte(fmt.Sprintf("one-%d;", i))
		p2 := []byte(strings.Repeat(fmt.Sprintf("two-%d;", i), i%7+1))
		stream.Write(frame(1, p1))
		stream.Write(frame(2, p2))
		want1.Write(p1)
		want2.Write(p2)
	}
	go raw.Write(stream.Bytes())
	if got := readN(t, c2, want2.Len()); !bytes.Equal(got, want2.Bytes()) {
		t.Errorf("conn 2 got %q", got)
	}
	if got := readN(t, c1, want1.Len()); !bytes.Equal(got, want1.Bytes()) {
		t.Errorf("conn 1 got %q", got)
	}
}

func TestPartialReads(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	c := open(t, m, PluginServiceConn)
	mustWrite(t, raw, frame(1, []byte("abcdefgh")))
	buf := make([]byte, 3)
	var got []byte
	for len(got) < 8 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n > 3 {
			t.Fatalf("read %d bytes into a 3-byte buffer", n)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "abcdefgh" {
		t.Fatalf("got %q", got)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("zero-length Read = %d, %v", n, err)
	}
}

func TestOneByteTrunkReads(t *testing.T) {
	a, raw := unixPair(t)
	trunk := &oneByteConn{Conn: a}
	m := newMux(t, trunk)
	c1 := open(t, m, PluginServiceConn)
	c2 := open(t, m, RuntimeServiceConn)
	var stream bytes.Buffer
	stream.Write(frame(1, []byte("hello, one")))
	stream.Write(frame(2, []byte("hello, two")))
	stream.Write(frame(1, []byte("!")))
	go raw.Write(stream.Bytes())
	if got := readN(t, c1, 11); string(got) != "hello, one!" {
		t.Errorf("conn 1 got %q", got)
	}
	if got := readN(t, c2, 10); string(got) != "hello, two" {
		t.Errorf("conn 2 got %q", got)
	}
	m.Close()
	if trunk.reads < stream.Len() {
		t.Errorf("only %d trunk reads for %d bytes: the wrapper was bypassed", trunk.reads, stream.Len())
	}
}

func TestWriteSplitOnWire(t *testing.T) {
	const max = 1000
	a, raw := unixPair(t)
	m := newMux(t, a, WithMaxPayload(max))
	c := open(t, m, RuntimeServiceConn)
	msg := make([]byte, 3*max+500)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		n, err := c.Write(msg)
		if err == nil && n != len(msg) {
			err = fmt.Errorf("short write %d", n)
		}
		errc <- err
	}()
	raw.SetReadDeadline(time.Now().Add(timeout))
	var got []byte
	for _, wantSize := range []uint32{max, max, max, 500} {
		var hdr [HeaderSize]byte
		if _, err := io.ReadFull(raw, hdr[:]); err != nil {
			t.Fatal(err)
		}
		id, size := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
		if id != 2 || size != wantSize {
			t.Fatalf("frame header conn %d size %d, want conn 2 size %d", id, size, wantSize)
		}
		p := make([]byte, size)
		if _, err := io.ReadFull(raw, p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p...)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("reassembled payload differs")
	}
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Fatalf("empty Write = %d, %v", n, err)
	}
}

func TestLargeWriteRoundTrip(t *testing.T) {
	a, b := unixPair(t)
	ma, mb := newMux(t, a), newMux(t, b)
	ca, cb := open(t, ma, PluginServiceConn), open(t, mb, PluginServiceConn)
	msg := make([]byte, 2*DefaultMaxPayload+12345)
	for i := range msg {
		msg[i] = byte(i % 251)
	}
	errc := make(chan error, 1)
	go func() { _, err := ca.Write(msg); errc <- err }()
	got := readN(t, cb, len(msg))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("reassembled payload differs")
	}
}

func TestZeroLengthFrameIgnored(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(1))
	c := open(t, m, PluginServiceConn)
	var stream bytes.Buffer
	stream.Write(header(1, 0))
	stream.Write(header(1, 0))
	// Empty frames for an unopened conn take no queue slot.
	for i := 0; i < 10; i++ {
		stream.Write(header(7, 0))
	}
	stream.Write(header(0, 0))
	stream.Write(frame(1, []byte("abc")))
	stream.Write(header(1, 0))
	stream.Write(frame(1, []byte("def")))
	mustWrite(t, raw, stream.Bytes())
	if got := readN(t, c, 6); string(got) != "abcdef" {
		t.Fatalf("got %q", got)
	}
	if m.Err() != nil {
		t.Fatalf("mux failed: %v", m.Err())
	}
}

func TestReservedConnFramesDiscarded(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(1))
	c := open(t, m, PluginServiceConn)
	for i := 0; i < 5; i++ {
		mustWrite(t, raw, frame(0, []byte("junk")))
	}
	mustWrite(t, raw, frame(1, []byte("ok")))
	if got := readN(t, c, 2); string(got) != "ok" {
		t.Fatalf("got %q", got)
	}
}

func TestOversizeFrame(t *testing.T) {
	for _, size := range []uint32{math.MaxUint32, DefaultMaxPayload + 1} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := append(header(1, size), make([]byte, 64)...)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m, err := New(newMemConn(data, nil))
			if err != nil {
				t.Fatal(err)
			}
			waitDone(t, m)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("allocated %d bytes for a rejected frame", alloc)
			}
			var fe *FrameTooLargeError
			if !errors.As(m.Err(), &fe) {
				t.Fatalf("Err = %v, want *FrameTooLargeError", m.Err())
			}
			if fe.Conn != 1 || fe.Size != size || fe.Max != DefaultMaxPayload {
				t.Errorf("error fields = %+v", *fe)
			}
			want := fmt.Sprintf("mux: conn 1: frame payload %d bytes exceeds maximum 4194314", size)
			if m.Err().Error() != want {
				t.Errorf("Err = %q, want %q", m.Err(), want)
			}
		})
	}
	t.Run("custom max", func(t *testing.T) {
		m, err := New(newMemConn(frame(2, make([]byte, 11)), nil), WithMaxPayload(10))
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, m)
		var fe *FrameTooLargeError
		if !errors.As(m.Err(), &fe) || fe.Size != 11 || fe.Max != 10 || fe.Conn != 2 {
			t.Fatalf("Err = %v", m.Err())
		}
	})
}

func TestConcurrentWriters(t *testing.T) {
	const (
		writers  = 8
		messages = 200
		max      = 512
	)
	a, b := unixPair(t)
	ma := newMux(t, a, WithMaxPayload(max))
	mb := newMux(t, b, WithMaxPayload(max))
	ids := []ConnID{PluginServiceConn, RuntimeServiceConn}

	// message layout: len uint32 | writer uint32 | seq uint32 | filler
	// where filler byte i is byte(writer*31 + seq + i).
	makeMsg := func(w, seq int) []byte {
		size := 12 + (w*977+seq*131)%(3*max)
		msg := make([]byte, size)
		binary.BigEndian.PutUint32(msg[0:], uint32(size))
		binary.BigEndian.PutUint32(msg[4:], uint32(w))
		binary.BigEndian.PutUint32(msg[8:], uint32(seq))
		for i := 12; i < size; i++ {
			msg[i] = byte(w*31 + seq + i)
		}
		return msg
	}

	var wg sync.WaitGroup
	errc := make(chan error, 2*writers+2)
	for _, id := range ids {
		wc := open(t, ma, id)
		rc := open(t, mb, id)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; seq < messages; seq++ {
					if _, err := wc.Write(makeMsg(w, seq)); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc.SetReadDeadline(time.Now().Add(timeout))
			next := make([]int, writers)
			for n := 0; n < writers*messages; n++ {
				var lenb [4]byte
				if _, err := io.ReadFull(rc, lenb[:]); err != nil {
					errc <- fmt.Errorf("conn %d: %w", id, err)
					return
				}
				size := binary.BigEndian.Uint32(lenb[:])
				if size < 12 || size > 3*max+12 {
					errc <- fmt.Errorf("conn %d: corrupt length %d", id, size)
					return
				}
				msg := make([]byte, size)
				copy(msg, lenb[:])
				if _, err := io.ReadFull(rc, msg[4:]); err != nil {
					errc <- fmt.Errorf("conn %d: %w", id, err)
					return
				}
				w := int(binary.BigEndian.Uint32(msg[4:]))
				seq := int(binary.BigEndian.Uint32(msg[8:]))
				if w >= writers || seq != next[w] {
					errc <- fmt.Errorf("conn %d: writer %d seq %d out of order", id, w, seq)
					return
				}
				next[w]++
				if !bytes.Equal(msg, makeMsg(w, seq)) {
					errc <- fmt.Errorf("conn %d: message %d/%d mixed up", id, w, seq)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestFramesBeforeOpen(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(4))
	c1 := open(t, m, PluginServiceConn)
	var stream bytes.Buffer
	for i := 0; i < 4; i++ {
		stream.Write(frame(2, []byte(fmt.Sprintf("early%d;", i))))
	}
	stream.Write(frame(1, []byte("sync")))
	mustWrite(t, raw, stream.Bytes())
	// Frames are dispatched in order: once "sync" arrived on conn 1, the
	// frames for conn 2 are buffered.
	if got := readN(t, c1, 4); string(got) != "sync" {
		t.Fatalf("got %q", got)
	}
	c2 := open(t, m, RuntimeServiceConn)
	mustWrite(t, raw, frame(2, []byte("late")))
	want := "early0;early1;early2;early3;late"
	if got := readN(t, c2, len(want)); string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	// A listener's conn gets its early frames too.
	mustWrite(t, raw, frame(5, []byte("five")))
	mustWrite(t, raw, frame(1, []byte("sync")))
	readN(t, c1, 4)
	l, err := m.Listen(5)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c5, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if got := readN(t, c5, 4); string(got) != "five" {
		t.Fatalf("got %q", got)
	}
}

func TestFramesAfterCloseDiscarded(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(2))
	c1 := open(t, m, PluginServiceConn)
	c3 := open(t, m, 3)
	c3.Close()
	// Many more frames than the queue length: all discarded, no failure.
	for i := 0; i < 10; i++ {
		mustWrite(t, raw, frame(3, []byte("gone")))
	}
	mustWrite(t, raw, frame(1, []byte("ok")))
	if got := readN(t, c1, 2); string(got) != "ok" {
		t.Fatalf("got %q", got)
	}
	if m.Err() != nil {
		t.Fatalf("mux failed: %v", m.Err())
	}
}

func TestPendingOverflow(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(3))
	for i := 0; i < 4; i++ {
		mustWrite(t, raw, frame(9, []byte("x")))
	}
	waitDone(t, m)
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "conn 9") || !strings.Contains(err.Error(), "read queue length") {
		t.Fatalf("Err = %v", err)
	}
}

// TestPendingConnsBounded sends one frame each for more never-opened
// connection IDs than the mux buffers: it must fail instead of buffering
// frames for every ID a peer invents.
func TestPendingConnsBounded(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a)
	for id := 10; id < 10+MaxPendingConns+1; id++ {
		mustWrite(t, raw, frame(ConnID(id), []byte("x")))
	}
	waitDone(t, m)
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), "never opened") {
		t.Fatalf("Err = %v", err)
	}
}

func TestBackpressure(t *testing.T) {
	a, raw := unixPair(t)
	m := newMux(t, a, WithReadQueueLength(2))
	c1 := open(t, m, PluginServiceConn)
	var want bytes.Buffer
	go func() {
		for i := 0; i < 100; i++ {
			p := []byte(fmt.Sprintf("%03d", i))
			raw.Write(frame(1, p))
		}
	}()
	for i := 0; i < 100; i++ {
		want.WriteString(fmt.Sprintf("%03d", i))
	}
	if got := readN(t, c1, want.Len()); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("got %q", got)
	}
	if m.Err() != nil {
		t.Fatalf("mux failed under backpressure: %v", m.Err())
	}
}

// TestRoundTripAllocs bounds what a round trip of a 1 KiB message
// through two muxes allocates, both ends and their readers counted:
// nothing, frame buffers recycled and the write vector a field (slack
// for the pool, which may drop buffers, under the race detector on
// purpose).
func TestRoundTripAllocs(t *testing.T) {
	ta, tb := unixPair(t)
	ma, mb := newMux(t, ta), newMux(t, tb)
	ca, cb := open(t, ma, PluginServiceConn), open(t, mb, PluginServiceConn)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ma.Close()
	defer mb.Close()
	wg.Go(func() {
		buf := make([]byte, 1<<10)
		for {
			if _, err := io.ReadFull(cb, buf); err != nil {
				return
			}
			if _, err := cb.Write(buf); err != nil {
				return
			}
		}
	})
	payload, buf := make([]byte, 1<<10), make([]byte, 1<<10)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := ca.Write(payload); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(ca, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a round trip allocates %.1f times, want at most 1", allocs)
	}
}

func TestFramePool(t *testing.T) {
	for _, n := range []int{1, 511, 512, 513, 1000, 1 << 12, 65535, maxPooledFrame, maxPooledFrame + 1, 1 << 20} {
		b := getFrame(n)
		if len(b) != n {
			t.Fatalf("getFrame(%d) has length %d", n, len(b))
		}
		if n <= maxPooledFrame && (cap(b) < n || cap(b) > 2*n && cap(b) != 1<<minPooledFrameShift) {
			t.Fatalf("getFrame(%d) has capacity %d", n, cap(b))
		}
		putFrame(b)
		if b2 := getFrame(n); len(b2) != n {
			t.Fatalf("recycled getFrame(%d) has length %d", n, len(b2))
		}
	}
}
