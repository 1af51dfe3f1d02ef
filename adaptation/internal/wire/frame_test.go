package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/internal/wirelimit"
	"google.golang.org/protobuf/proto"
)

// ttrpcMessage encodes one ttrpc message of type typ with payload p.
func ttrpcMessage(stream uint32, typ byte, p []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(p))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(p)))
	binary.BigEndian.PutUint32(b[4:8], stream)
	b[8] = typ
	return append(b, p...)
}

// envelope returns the encoding of ttrpc's envelope m.
func envelope(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScanner feeds a stream of messages cut at random points and
// checks that every header is seen once, with its type, and that limit
// never lets a read cross a header or payload boundary.
func TestScanner(t *testing.T) {
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
		ends[len(stream)+HeaderSize] = true
		stream = append(stream, msg...)
		ends[len(stream)] = true
		msgEnd[len(stream)] = true
		want = append(want, typ)
	}
	var (
		s   scanner
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

// TestScannerEnvelopes checks the envelope checks: requests and
// responses within wirelimit's envelope bounds pass, fed a byte at a
// time; one with more metadata than wirelimit.MaxEnvelopeValues and one
// that is not a protobuf encoding are refused while their bytes pass;
// data messages are not scanned.
func TestScannerEnvelopes(t *testing.T) {
	tooMany := &ttrpc.Request{Service: "nri.pkg.api.v1alpha1.Runtime", Method: "UpdateContainers"}
	for i := range wirelimit.MaxEnvelopeValues + 1 {
		tooMany.Metadata = append(tooMany.Metadata, &ttrpc.KeyValue{Key: fmt.Sprint("k", i), Value: "v"})
	}
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for _, tc := range []struct {
		name    string
		typ     byte
		payload []byte
		refused bool
	}{
		{"request", typeRequest, envelope(t, &ttrpc.Request{Service: "s", Method: "m", Payload: []byte("x"),
			Metadata: []*ttrpc.KeyValue{{Key: "a", Value: "b"}}}), false},
		{"response", typeResponse, envelope(t, &ttrpc.Response{Payload: []byte("answer")}), false},
		{"metadata over the bound", typeRequest, envelope(t, tooMany), true},
		{"garbage request", typeRequest, garbage, true},
		{"garbage response", typeResponse, garbage, true},
		{"garbage data", typeData, garbage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scanner{envelopes: true}
			msg := ttrpcMessage(1, tc.typ, tc.payload)
			var (
				err error
				at  int // bytes fed when refused
			)
			for ; at < len(msg) && err == nil; at++ {
				err = s.feed(msg[at:at+1], func(byte, uint32, int) error { return nil })
			}
			if refused := err != nil; refused != tc.refused {
				t.Fatalf("refused: %v (%v), want %v", refused, err, tc.refused)
			}
			if tc.refused && tc.typ == typeRequest && len(tc.payload) > len(garbage) {
				var lim *wirelimit.LimitError
				if !errors.As(err, &lim) {
					t.Errorf("refused with %v, want a *wirelimit.LimitError", err)
				}
				// Refused as the values pass, not at the message's end.
				if at == len(msg) {
					t.Errorf("refused only at the message's end (%d bytes)", at)
				}
			}
		})
	}
}
