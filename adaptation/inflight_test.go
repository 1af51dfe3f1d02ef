package adaptation

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ttrpcMessage encodes one ttrpc message of type typ with payload p.
func ttrpcMessage(stream uint32, typ byte, p []byte) []byte {
	b := make([]byte, ttrpcHeaderSize, ttrpcHeaderSize+len(p))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(p)))
	binary.BigEndian.PutUint32(b[4:8], stream)
	b[8] = typ
	return append(b, p...)
}

// TestMsgScanner feeds a stream of messages cut at random points and
// checks that every header is seen once, with its type, and that limit
// never lets a read cross a header or payload boundary.
func TestMsgScanner(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var (
		stream []byte
		want   []byte
		ends   = map[int]bool{0: true} // offsets where a header or payload ends
		msgEnd = map[int]bool{0: true} // offsets where a message ends
	)
	for i := range 200 {
		typ := byte(1 + r.IntN(3))
		msg := ttrpcMessage(uint32(2*i+1), typ, bytes.Repeat([]byte{'x'}, r.IntN(300)))
		ends[len(stream)+ttrpcHeaderSize] = true
		stream = append(stream, msg...)
		ends[len(stream)] = true
		msgEnd[len(stream)] = true
		want = append(want, typ)
	}
	var (
		s   msgScanner
		got []byte
		off int
	)
	for off < len(stream) {
		n := s.limit(1 + r.IntN(64))
		n = min(n, len(stream)-off)
		if n == 0 {
			t.Fatalf("limit 0 at offset %d", off)
		}
		for k := off + 1; k < off+n; k++ {
			if ends[k] {
				t.Fatalf("a read of %d bytes at %d crosses the boundary at %d", n, off, k)
			}
		}
		_ = s.feed(stream[off:off+n], func(typ byte, _ uint32, _ int) error { got = append(got, typ); return nil })
		off += n
		if s.atBoundary() != msgEnd[off] {
			t.Fatalf("atBoundary=%v at offset %d", s.atBoundary(), off)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("saw %d headers, want %d (types differ: %v)", len(got), len(want), !slices.Equal(got, want))
	}
}

// TestInflightGate checks that the gated connection hands out no new
// request while the limit is unanswered, in number or in bytes, and goes
// on once one is answered.
func TestInflightGate(t *testing.T) {
	t.Run("count", func(t *testing.T) { testInflightGate(t, 2, MaxMessageSize) })
	t.Run("bytes", func(t *testing.T) { testInflightGate(t, 100, 2*3) })
}

func testInflightGate(t *testing.T, max, maxBytes int) {
	plugin, runtime := net.Pipe()
	defer plugin.Close()
	gate := newInflightGate(max)
	gate.maxBytes = maxBytes
	limit := &atomic.Int64{}
	limit.Store(MaxMessageSize)
	gc := &msgConn{Conn: runtime, gate: gate, gone: make(chan struct{}), limit: limit,
		violate: func(err error) { t.Errorf("limit violated: %v", err) }}
	defer gc.Close()
	go func() {
		for i := range 3 {
			if _, err := plugin.Write(ttrpcMessage(uint32(2*i+1), ttrpcTypeRequest, []byte("req"))); err != nil {
				return
			}
		}
	}()
	go io.Copy(io.Discard, plugin) // the plugin reads the answers

	read := func() []byte {
		t.Helper()
		msg := make([]byte, ttrpcHeaderSize+3)
		if _, err := io.ReadFull(gc, msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	read()
	read()
	third := make(chan []byte, 1)
	go func() {
		msg := make([]byte, ttrpcHeaderSize+3)
		if _, err := io.ReadFull(gc, msg); err == nil {
			third <- msg
		}
	}()
	select {
	case <-third:
		t.Fatal("a third request was read with two unanswered")
	case <-time.After(100 * time.Millisecond):
	}
	// One answer, written in two pieces, lets the third in.
	ans := ttrpcMessage(1, ttrpcTypeResponse, []byte("ok"))
	if _, err := gc.Write(ans[:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Write(ans[4:]); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-third:
		if binary.BigEndian.Uint32(msg[4:8]) != 5 {
			t.Fatalf("third message has stream %d", binary.BigEndian.Uint32(msg[4:8]))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the third request was not read after an answer")
	}
}

// TestMessageLimit checks that a message announcing more than the limit
// is refused on its header, before ttrpc would allocate it.
func TestMessageLimit(t *testing.T) {
	plugin, runtime := net.Pipe()
	defer plugin.Close()
	limit := &atomic.Int64{}
	limit.Store(100)
	violated := make(chan error, 1)
	mc := &msgConn{Conn: runtime, gone: make(chan struct{}), limit: limit,
		violate: func(err error) { violated <- err; runtime.Close() }}
	go func() {
		plugin.Write(ttrpcMessage(1, ttrpcTypeResponse, bytes.Repeat([]byte{'a'}, 100)))
		plugin.Write(ttrpcMessage(3, ttrpcTypeResponse, bytes.Repeat([]byte{'b'}, 101)))
	}()
	if _, err := io.ReadFull(mc, make([]byte, ttrpcHeaderSize+100)); err != nil {
		t.Fatalf("a message at the limit: %v", err)
	}
	if _, err := io.ReadFull(mc, make([]byte, ttrpcHeaderSize)); err == nil {
		t.Fatal("the header of a message over the limit was read")
	}
	select {
	case err := <-violated:
		if !strings.Contains(err.Error(), "101-byte message") {
			t.Errorf("violation: %v", err)
		}
	default:
		t.Fatal("no violation reported")
	}
	// Once the limit is lifted, reads pass through.
	limit.Store(MaxMessageSize)
	if mc.gate != nil {
		t.Fatal("test conn has a gate")
	}
}
