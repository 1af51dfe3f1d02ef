package fastencode

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
)

// populate sets every field of m (recursively; maps and lists get n
// entries) to a non-zero value derived from seed, and gives every message
// an unknown field.
func populate(m protoreflect.Message, seed, n, depth int) {
	if depth > 12 {
		panic("populate: schema nests deeper than expected")
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		s := seed*31 + i
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := 0; j < n; j++ {
				k := scalar(fd.MapKey(), s+j)
				var v protoreflect.Value
				if fd.MapValue().Message() != nil {
					v = mp.NewValue()
					populate(v.Message(), s+j, n, depth+1)
				} else {
					v = scalar(fd.MapValue(), s+j)
				}
				mp.Set(k.MapKey(), v)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				if fd.Message() != nil {
					e := l.NewElement()
					populate(e.Message(), s+j, n, depth+1)
					l.Append(e)
				} else {
					l.Append(scalar(fd, s+j))
				}
			}
		case fd.Message() != nil:
			populate(m.Mutable(fd).Message(), s, n, depth+1)
		default:
			m.Set(fd, scalar(fd, s))
		}
	}
	// An unknown varint field and an unknown bytes field.
	u := protowire.AppendVarint(protowire.AppendTag(nil, 1500, protowire.VarintType), uint64(seed)+1)
	u = protowire.AppendBytes(protowire.AppendTag(u, 1501, protowire.BytesType), []byte{byte(seed), 1, 2})
	m.SetUnknown(u)
}

// scalar returns a non-zero value of fd's (scalar) kind.
func scalar(fd protoreflect.FieldDescriptor, s int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d-é", fd.Name(), s))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(s), 0xff, 0})
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(1 + s%(vals.Len()-1)).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-int32(s) - 1000)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-int64(s) - 1<<40)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(s) + 1<<31)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(s) + 1<<63)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(s) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(s) + 0.25)
	}
	panic(fmt.Sprintf("scalar: unhandled kind %v of %s", fd.Kind(), fd.FullName()))
}

// allSet reports the first field (recursively) of m that is not set, or
// the first message without unknown fields.
func allSet(m protoreflect.Message) string {
	if len(m.GetUnknown()) == 0 {
		return string(m.Descriptor().FullName()) + " (unknown fields)"
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			return string(fd.FullName())
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				var bad string
				m.Get(fd).Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
					bad = allSet(v.Message())
					return bad == ""
				})
				if bad != "" {
					return bad
				}
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := m.Get(fd).List()
				for j := 0; j < l.Len(); j++ {
					if bad := allSet(l.Get(j).Message()); bad != "" {
						return bad
					}
				}
			}
		case fd.Message() != nil:
			if bad := allSet(m.Get(fd).Message()); bad != "" {
				return bad
			}
		}
	}
	return ""
}

func fullPod(n int) *api.PodSandbox {
	p := &api.PodSandbox{}
	populate(p.ProtoReflect(), 3, n, 0)
	return p
}

func fullContainer(n int) *api.Container {
	c := &api.Container{}
	populate(c.ProtoReflect(), 5, n, 0)
	return c
}

// encoder is one implementation under test (the real one, or a broken
// one in TestHarnessCatches).
type encoder struct {
	append func([]byte, proto.Message) ([]byte, error)
	size   func(proto.Message) int
}

var fast = encoder{
	append: func(b []byte, m proto.Message) ([]byte, error) {
		switch x := m.(type) {
		case *api.PodSandbox:
			return AppendPod(b, x)
		case *api.Container:
			return AppendContainer(b, x)
		}
		panic("not a pod or container")
	},
	size: func(m proto.Message) int {
		switch x := m.(type) {
		case *api.PodSandbox:
			return SizePod(x)
		case *api.Container:
			return SizeContainer(x)
		}
		panic("not a pod or container")
	},
}

var prefix = []byte("prefix")

// diffEncode encodes m with enc (appending to a non-empty prefix) and
// reports, "" meaning none: an error where proto.Marshal has none (or the
// reverse), an error not wrapping proto.Error, a prefix not preserved, a
// size differing from the length appended or from proto.Size, a decoding
// not proto.Equal to m, and, if exact, bytes differing from proto.Marshal's
// (plain and Deterministic).
func diffEncode(enc encoder, m proto.Message, exact bool) string {
	want, werr := proto.Marshal(m)
	in := append([]byte(nil), prefix...)
	got, gerr := enc.append(in, m)
	switch {
	case (werr == nil) != (gerr == nil):
		return fmt.Sprintf("proto.Marshal error %v, fastencode error %v", werr, gerr)
	case gerr != nil:
		if !errors.Is(gerr, proto.Error) {
			return fmt.Sprintf("error %v does not wrap proto.Error", gerr)
		}
		if !bytes.Equal(got, prefix) {
			return fmt.Sprintf("on error returned %q, want the prefix %q", got, prefix)
		}
		return ""
	case !bytes.HasPrefix(got, prefix):
		return "prefix not preserved"
	}
	got = got[len(prefix):]
	if s := enc.size(m); s != len(got) {
		return fmt.Sprintf("size %d, appended %d bytes", s, len(got))
	}
	if s := proto.Size(m); s != len(got) {
		return fmt.Sprintf("proto.Size %d, appended %d bytes", s, len(got))
	}
	back := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(got, back); err != nil {
		return fmt.Sprintf("decoding the encoding: %v", err)
	}
	if !m.ProtoReflect().IsValid() {
		// A typed nil encodes as an empty message.
		m = m.ProtoReflect().New().Interface()
	}
	if !proto.Equal(back, m) {
		return fmt.Sprintf("decoded differs\nwant:\n%s\ngot:\n%s", textOf(m), textOf(back))
	}
	if exact {
		if !bytes.Equal(got, want) {
			return fmt.Sprintf("bytes differ from proto.Marshal\nwant %x\ngot  %x", want, got)
		}
		det, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil || !bytes.Equal(got, det) {
			return fmt.Sprintf("bytes differ from Deterministic proto.Marshal (%v)\nwant %x\ngot  %x", err, det, got)
		}
	}
	return ""
}

func textOf(m proto.Message) string {
	return prototext.MarshalOptions{Multiline: true, EmitUnknown: true}.Format(m)
}
