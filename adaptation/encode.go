package adaptation

import (
	"slices"

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

// encodedField returns the encoding of m as field num of a message (tag,
// length, bytes), to be set as unknown fields of a message sent in place
// of one with m in that field (see encodedOnce); false if m cannot be
// encoded.
func encodedField(num protowire.Number, m proto.Message) ([]byte, bool) {
	return appendField(nil, num, m)
}

// appendField appends the encoding of m as field num (see encodedField)
// to b; false (and b unchanged) if m cannot be encoded. Pods and
// containers are encoded by hand (see encodedSize).
func appendField(b []byte, num protowire.Number, m proto.Message) ([]byte, bool) {
	n := encodedSize(m)
	out := slices.Grow(b, protowire.SizeTag(num)+protowire.SizeVarint(uint64(n))+n)
	out = protowire.AppendTag(out, num, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(n))
	out, err := appendEncoded(out, m)
	if err != nil {
		return b, false
	}
	return out, true
}
