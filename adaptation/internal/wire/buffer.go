package wire

import (
	"math/bits"
	"slices"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastencode"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Buffer is a buffer a request is encoded into for one call (see
// [Shared.Encode]), recycled once the call has returned ([Buffer.Free]).
type Buffer struct{ b []byte }

// maxPooledEncoding bounds the buffers kept for reuse: one huge request
// does not pin its buffer's memory.
const maxPooledEncoding = 64 << 10

// buffers holds the Buffers given back (Free).
var buffers sync.Pool

// getBuffer returns an empty buffer with room for n bytes, a recycled
// one if n is within maxPooledEncoding. Capacities are powers of two (1
// KiB at least), so that the requests of an event, which grow a little
// from plugin to plugin, find room in the buffer of the one before.
func getBuffer(n int) *Buffer {
	if n > maxPooledEncoding {
		return &Buffer{b: make([]byte, 0, n)}
	}
	eb, _ := buffers.Get().(*Buffer)
	if eb == nil {
		eb = &Buffer{}
	}
	if cap(eb.b) < n {
		eb.b = make([]byte, 0, max(1<<bits.Len(uint(n-1)), 1<<10))
	}
	eb.b = eb.b[:0]
	return eb
}

// Free gives eb back for reuse, unless it is above a bound (64 KiB) or
// nil. Nothing may use eb or its bytes afterwards.
func (eb *Buffer) Free() {
	if eb == nil || cap(eb.b) > maxPooledEncoding {
		return
	}
	buffers.Put(eb)
}

// fieldSize is the encoded size of a length-delimited field (numbers
// below 16) holding n bytes.
func fieldSize(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// appendField appends m as field num of a message (tag, length, bytes)
// to b, to be sent in place of a message with m in that field (see
// Shared.Encode); n is encodedSize(m), computed just before (m unchanged
// since, see appendEncoded). On error b is returned unchanged.
func appendField(b []byte, num protowire.Number, m proto.Message, n int) ([]byte, error) {
	out := slices.Grow(b, protowire.SizeTag(num)+protowire.SizeVarint(uint64(n))+n)
	out = protowire.AppendTag(out, num, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(n))
	out, err := appendEncoded(out, m)
	if err != nil {
		return b, err
	}
	return out, nil
}

// encodedSize is the size of m's encoding: pods and containers, most of
// a Synchronize, are sized and encoded by hand (internal/fastencode),
// which produces protobuf-go's encoding several times faster.
func encodedSize(m proto.Message) int {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.SizePod(x)
	case *api.Container:
		return fastencode.SizeContainer(x)
	}
	return proto.Size(m)
}

// appendEncoded appends m's encoding, encodedSize(m) bytes, to b. The
// size was just computed (encodedSize): the encoders use the sizes it
// cached for what protobuf-go encodes.
func appendEncoded(b []byte, m proto.Message) ([]byte, error) {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.AppendSizedPod(b, x)
	case *api.Container:
		return fastencode.AppendSizedContainer(b, x)
	}
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}
