// Package wirelimit bounds what a protobuf message from an untrusted peer
// may decode into, before it is decoded.
//
// Decoding amplifies: an empty entry of a repeated message field is 2
// bytes on the wire and a Go struct of 50 to 200 bytes, plus its pointer,
// once decoded; a 4 MiB message of them decodes into about 170 MiB. A
// [Scanner] walks the wire format of a message without allocating and
// counts what decoding would allocate for, against [Limits] compiled for
// the message type ([Compile]): the values (nested messages, elements of
// repeated fields, map entries), the entries of named repeated fields,
// and the nesting depth. [Schema.Check] scans a whole message; a Scanner
// fed piece by piece follows a message as it is read from a stream.
//
// The walk follows protobuf-go's decoder: a message it finds within its
// limits decodes with proto.Unmarshal into at most those values; one it
// reports malformed ([ErrMalformed]) proto.Unmarshal refuses too. Its cost
// is a few nanoseconds per field tag; the bytes of strings, bytes fields
// and unknown fields are skipped, not read.
//
// nri.go holds the limits of the NRI messages a runtime decodes from a
// plugin ([Answer], [Request] and the ttrpc envelopes).
package wirelimit

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxDepth is the deepest nesting of messages and groups a Scanner
// follows; a deeper message exceeds its limits. (NRI's messages nest
// about 8 deep; protobuf-go's own limit is 10,000.)
const MaxDepth = 32

// maxFieldCaps is how many fields one Limits may cap.
const maxFieldCaps = 4

// Limits bound what one message may decode into.
type Limits struct {
	// Values bounds the values the message holds, at any depth: every
	// occurrence of a message field, every element of a repeated field
	// and every map entry counts one (a map entry two if the map's values
	// are messages: decoding makes one for an entry without a value
	// too). Singular scalars, strings and bytes
	// (a later occurrence replaces an earlier one) and unknown fields
	// (kept as their bytes) are not counted: decoding them costs about
	// their size on the wire. 0: no bound.
	Values int
	// Fields bounds the entries of individual repeated or map fields, by
	// the field's full name (such as
	// "nri.pkg.api.v1alpha1.SynchronizeResponse.update"), counted wherever
	// the field occurs in the message. At most 4 fields.
	Fields map[protoreflect.FullName]int
}

// Schema is a message type compiled with its limits, for [Schema.Check]
// and [Scanner]. It is immutable and safe for concurrent use.
type Schema struct {
	name   protoreflect.FullName
	root   *node
	values int
	caps   []fieldCap
}

// fieldCap is one bounded field.
type fieldCap struct {
	name  protoreflect.FullName
	limit int
}

// node is one message type: its fields by number.
type node struct {
	dense  []*field // by number, for the numbers below len(dense)
	sparse map[protowire.Number]*field
}

// lookup returns the field numbered num, or nil for an unknown field.
func (n *node) lookup(num protowire.Number) *field {
	if n == nil {
		return nil
	}
	if int(num) < len(n.dense) {
		return n.dense[num]
	}
	return n.sparse[num]
}

// field is one field of a message type, as far as the walk cares.
type field struct {
	// msg is the type of a message, group or map entry field; nil for
	// scalars, strings and bytes.
	msg *node
	// group is set for a field of group encoding.
	group bool
	// list is set for repeated and map fields.
	list bool
	// weight is the values one occurrence (one element of a packed run)
	// counts: 0 for singular scalars, strings and bytes.
	weight int
	// elem is the wire type of one element of a repeated scalar field;
	// packable is set if a run of them may be packed (numeric kinds).
	elem     protowire.Type
	packable bool
	// capped is the index of the field in Schema.caps, or -1.
	capped int
}

// denseLimit bounds the field numbers kept in node.dense: NRI's
// extension fields are numbered from 1000 and go to node.sparse.
const denseLimit = 64

// Compile compiles the message type md with lim. It panics if lim caps
// more than 4 fields or names a field that is not a repeated or map field
// of a message reachable from md: limits are the program's constants.
func Compile(md protoreflect.MessageDescriptor, lim Limits) *Schema {
	if len(lim.Fields) > maxFieldCaps {
		panic(fmt.Sprintf("wirelimit: %d fields capped, at most %d", len(lim.Fields), maxFieldCaps))
	}
	s := &Schema{name: md.FullName(), values: lim.Values}
	capIdx := map[protoreflect.FullName]int{}
	for name, limit := range lim.Fields {
		capIdx[name] = len(s.caps)
		s.caps = append(s.caps, fieldCap{name: name, limit: limit})
	}
	found := map[protoreflect.FullName]bool{}
	nodes := map[protoreflect.FullName]*node{}
	var build func(md protoreflect.MessageDescriptor) *node
	build = func(md protoreflect.MessageDescriptor) *node {
		if n, ok := nodes[md.FullName()]; ok {
			return n // recursive types share their node
		}
		n := &node{sparse: map[protowire.Number]*field{}}
		nodes[md.FullName()] = n
		fds := md.Fields()
		for i := range fds.Len() {
			fd := fds.Get(i)
			f := &field{list: fd.IsList() || fd.IsMap(), capped: -1}
			switch {
			case fd.IsMap() && fd.MapValue().Message() != nil:
				f.weight = 2
			case f.list || fd.Message() != nil:
				f.weight = 1
			}
			if idx, ok := capIdx[fd.FullName()]; ok {
				if !f.list {
					panic(fmt.Sprintf("wirelimit: %s is not a repeated field", fd.FullName()))
				}
				f.capped = idx
				found[fd.FullName()] = true
			}
			switch fd.Kind() {
			case protoreflect.MessageKind:
				f.msg, f.elem = build(fd.Message()), protowire.BytesType
			case protoreflect.GroupKind:
				f.msg, f.group, f.elem = build(fd.Message()), true, protowire.StartGroupType
			case protoreflect.StringKind, protoreflect.BytesKind:
				f.elem = protowire.BytesType
			case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
				f.elem, f.packable = protowire.Fixed32Type, true
			case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
				f.elem, f.packable = protowire.Fixed64Type, true
			default: // bool, enum and the varint integers
				f.elem, f.packable = protowire.VarintType, true
			}
			num := fd.Number()
			if num < denseLimit {
				for len(n.dense) <= int(num) {
					n.dense = append(n.dense, nil)
				}
				n.dense[num] = f
			} else {
				n.sparse[num] = f
			}
		}
		return n
	}
	s.root = build(md)
	for name := range capIdx {
		if !found[name] {
			panic(fmt.Sprintf("wirelimit: %s caps %s, which it does not hold", md.FullName(), name))
		}
	}
	return s
}

// Name returns the full name of the schema's message type.
func (s *Schema) Name() protoreflect.FullName { return s.name }

// Check scans b, the encoding of one message of the schema's type, and
// returns a *[LimitError] if it exceeds the limits, an error wrapping
// [ErrMalformed] if it is not a valid encoding, or nil. It does not
// allocate.
func (s *Schema) Check(b []byte) error {
	var sc Scanner
	sc.Reset(s, len(b))
	if err := sc.Feed(b); err != nil {
		return err
	}
	return sc.Close()
}
