package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// maxMessage is the message limit of the tests' connections: NRI's.
const maxMessage = 4 << 20

// limitOf returns a message limit of n.
func limitOf(n int) *atomic.Int64 {
	l := &atomic.Int64{}
	l.Store(int64(n))
	return l
}

// request is the payload of a small ttrpc request.
func request(t testing.TB) []byte {
	return envelope(t, &ttrpc.Request{Service: "nri.pkg.api.v1alpha1.Runtime", Method: "UpdateContainers", Payload: []byte("req")})
}

// TestGate checks that the gated connection hands out no new request
// while the limit is unanswered, in number or in bytes, and goes on once
// one is answered.
func TestGate(t *testing.T) {
	n := len(request(t))
	t.Run("count", func(t *testing.T) { testGate(t, NewGate(2, maxMessage)) })
	t.Run("bytes", func(t *testing.T) { testGate(t, NewGate(100, 2*n)) })
}

func testGate(t *testing.T, gate *Gate) {
	plugin, runtime := net.Pipe()
	defer plugin.Close()
	req := request(t)
	gc := NewConn(runtime, ConnConfig{Gate: gate, Gone: make(chan struct{}), Limit: limitOf(maxMessage),
		Violate: func(err error) { t.Errorf("limit violated: %v", err) }})
	defer gc.Close()
	go func() {
		for i := range 3 {
			if _, err := plugin.Write(ttrpcMessage(uint32(2*i+1), typeRequest, req)); err != nil {
				return
			}
		}
	}()
	go io.Copy(io.Discard, plugin) // the plugin reads the answers

	read := func() []byte {
		t.Helper()
		msg := make([]byte, HeaderSize+len(req))
		if _, err := io.ReadFull(gc, msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	read()
	read()
	if n := gate.Unanswered(); n != 2 {
		t.Errorf("%d unanswered, want 2", n)
	}
	third := make(chan []byte, 1)
	go func() {
		msg := make([]byte, HeaderSize+len(req))
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
	ans := ttrpcMessage(1, typeResponse, envelope(t, &ttrpc.Response{Payload: []byte("ok")}))
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
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("the third request was not read after an answer")
	}
}

// TestGateRelease checks that a Read waiting at a full gate returns once
// the connection is closed, or once Gone is: the wait has a bound.
func TestGateRelease(t *testing.T) {
	for _, how := range []string{"Close", "Gone"} {
		t.Run(how, func(t *testing.T) {
			plugin, runtime := net.Pipe()
			defer plugin.Close()
			gone := make(chan struct{})
			gc := NewConn(runtime, ConnConfig{Gate: NewGate(1, maxMessage), Gone: gone, Limit: limitOf(maxMessage),
				Violate: func(err error) { t.Errorf("limit violated: %v", err) }})
			defer gc.Close()
			req := request(t)
			go plugin.Write(ttrpcMessage(1, typeRequest, req))
			if _, err := io.ReadFull(gc, make([]byte, HeaderSize+len(req))); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() {
				_, err := gc.Read(make([]byte, 64))
				waited <- err
			}()
			select {
			case err := <-waited:
				t.Fatalf("a read at a full gate returned: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			if how == "Close" {
				gc.Close()
			} else {
				close(gone)
			}
			select {
			case err := <-waited:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("the waiting read returned %v, want net.ErrClosed", err)
				}
			case <-time.After(testscale.D(5 * time.Second)):
				t.Fatal("the waiting read was not released")
			}
		})
	}
}

// TestMessageLimit checks that a message announcing more than the limit
// is refused on its header, before ttrpc would allocate it, and that the
// limit is read at each header (it is raised once a plugin is
// configured).
func TestMessageLimit(t *testing.T) {
	plugin, runtime := net.Pipe()
	defer plugin.Close()
	atLimit := ttrpcMessage(1, typeResponse, envelope(t, &ttrpc.Response{Payload: bytes.Repeat([]byte{'a'}, 90)}))
	over := ttrpcMessage(3, typeResponse, envelope(t, &ttrpc.Response{Payload: bytes.Repeat([]byte{'b'}, 91)}))
	limit := limitOf(len(atLimit) - HeaderSize)
	violated := make(chan error, 1)
	mc := NewConn(runtime, ConnConfig{Gone: make(chan struct{}), Limit: limit,
		Violate: func(err error) { violated <- err; runtime.Close() }})
	go func() {
		plugin.Write(atLimit)
		plugin.Write(over)
	}()
	if _, err := io.ReadFull(mc, make([]byte, len(atLimit))); err != nil {
		t.Fatalf("a message at the limit: %v", err)
	}
	if _, err := io.ReadFull(mc, make([]byte, HeaderSize)); err == nil {
		t.Fatal("the header of a message over the limit was read")
	}
	select {
	case err := <-violated:
		if want := fmt.Sprintf("%d-byte message", len(over)-HeaderSize); !strings.Contains(err.Error(), want) {
			t.Errorf("violation: %v, want one about a %s", err, want)
		}
	default:
		t.Fatal("no violation reported")
	}

	// A raised limit applies to the next header.
	plugin2, runtime2 := net.Pipe()
	defer plugin2.Close()
	mc2 := NewConn(runtime2, ConnConfig{Gone: make(chan struct{}), Limit: limit,
		Violate: func(err error) { t.Errorf("violated after the limit was raised: %v", err) }})
	limit.Store(maxMessage)
	go plugin2.Write(over)
	if _, err := io.ReadFull(mc2, make([]byte, len(over))); err != nil {
		t.Fatalf("a message within the raised limit: %v", err)
	}
}

// TestConnEnvelope checks that a request whose envelope breaks
// wirelimit's bounds fails the Read and is reported, before ttrpc would
// decode it.
func TestConnEnvelope(t *testing.T) {
	plugin, runtime := net.Pipe()
	defer plugin.Close()
	violated := make(chan error, 1)
	mc := NewConn(runtime, ConnConfig{Gone: make(chan struct{}), Limit: limitOf(maxMessage), Gate: NewGate(16, maxMessage),
		Violate: func(err error) { violated <- err; runtime.Close() }})
	defer mc.Close()
	garbage := bytes.Repeat([]byte{0xff}, 16)
	go plugin.Write(ttrpcMessage(1, typeRequest, garbage))
	_, err := io.ReadFull(mc, make([]byte, HeaderSize+len(garbage)))
	if err == nil {
		t.Fatal("a request that is not a protobuf encoding was read")
	}
	select {
	case verr := <-violated:
		if !strings.Contains(verr.Error(), "does not decode") {
			t.Errorf("violation: %v", verr)
		}
	default:
		t.Fatal("no violation reported")
	}
}

// TestWriteSignal checks that writes before Arm do not signal and the
// first one after it does.
func TestWriteSignal(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	go io.Copy(io.Discard, b)
	s := NewWriteSignal()
	c := s.Wrap(a)
	defer c.Close()
	if _, err := c.Write([]byte("before")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Written():
		t.Fatal("signalled before it was armed")
	default:
	}
	s.Arm()
	if _, err := c.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Written():
	default:
		t.Fatal("not signalled by a write once armed")
	}
	if _, err := c.Write([]byte("again")); err != nil {
		t.Fatalf("a write after the signal: %v", err)
	}
}
