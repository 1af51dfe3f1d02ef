package adaptation

import (
	"slices"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastencode"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// encodedOnce returns a message of req's type that carries req's encoding
// as unknown fields, which proto.Marshal copies to the wire as they are:
// a notification sent to many plugins over ttrpc (which marshals the
// request for every call) is encoded once instead of once per plugin.
// The result encodes to the same bytes as req but has none of its fields
// set, so it is only for the wire: builtin plugins, the StateChange
// fallback and the observer get req. It returns req if it cannot encode
// it.
func encodedOnce[Req proto.Message](req Req) Req {
	if !req.ProtoReflect().IsValid() {
		return req
	}
	buf, err := proto.Marshal(req)
	if err != nil {
		return req
	}
	m := req.ProtoReflect().New()
	m.SetUnknown(buf)
	out, ok := m.Interface().(Req)
	if !ok {
		return req
	}
	return out
}

// connected counts the plugins reached over a connection.
func connected(ps []*plugin) int {
	n := 0
	for _, p := range ps {
		if p.kind != KindBuiltin {
			n++
		}
	}
	return n
}

// appendField appends m as field num of a message (tag, length, bytes)
// to b, to be set as unknown fields of a message sent in place of one
// with m in that field (see encodedOnce); n is encodedSize(m). On error b
// is returned unchanged.
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

// appendEncoded appends m's encoding, encodedSize(m) bytes, to b.
func appendEncoded(b []byte, m proto.Message) ([]byte, error) {
	switch x := m.(type) {
	case *api.PodSandbox:
		return fastencode.AppendPod(b, x)
	case *api.Container:
		return fastencode.AppendContainer(b, x)
	}
	// The size was just computed: marshal with it.
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}
