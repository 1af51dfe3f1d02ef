package wirelimit

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// testFile describes wirelimit.test.Node, a proto2 message with what NRI's
// messages lack: a recursive type, a group, packed and unpacked numeric
// lists of each wire type, a map with message values, a field numbered
// above the dense table.
const testFile = `
name: "wirelimit_test.proto" package: "wirelimit.test" syntax: "proto2"
message_type {
  name: "Node"
  field { name: "children" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirelimit.test.Node" }
  field { name: "child" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".wirelimit.test.Node" }
  field { name: "ints" number: 3 label: LABEL_REPEATED type: TYPE_INT64 }
  field { name: "fixed" number: 4 label: LABEL_REPEATED type: TYPE_FIXED32 options { packed: true } }
  field { name: "doubles" number: 5 label: LABEL_REPEATED type: TYPE_DOUBLE }
  field { name: "names" number: 6 label: LABEL_REPEATED type: TYPE_STRING }
  field { name: "grp" number: 7 label: LABEL_REPEATED type: TYPE_GROUP type_name: ".wirelimit.test.Node.Grp" }
  field { name: "m" number: 8 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirelimit.test.Node.MEntry" }
  field { name: "s" number: 9 label: LABEL_OPTIONAL type: TYPE_STRING }
  field { name: "flags" number: 10 label: LABEL_REPEATED type: TYPE_BOOL }
  field { name: "far" number: 1500 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirelimit.test.Node" }
  nested_type {
    name: "Grp"
    field { name: "x" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
    field { name: "sub" number: 2 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".wirelimit.test.Node" }
  }
  nested_type {
    name: "MEntry" options { map_entry: true }
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".wirelimit.test.Node" }
  }
}`

// nodeType is the message type of testFile's Node.
var nodeType = func() protoreflect.MessageType {
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(testFile), fdp); err != nil {
		panic(err)
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic(err)
	}
	return dynamicpb.NewMessageType(fd.Messages().ByName("Node"))
}()

// nodeSchema caps Node.children at 8 and all values at 64, small enough
// for the fuzzer to reach.
var nodeSchema = Compile(nodeType.Descriptor(), Limits{Values: 64,
	Fields: map[protoreflect.FullName]int{"wirelimit.test.Node.children": 8}})

// outcome classifies a scan's error: "ok", "malformed" or the limit.
func outcome(err error) string {
	var lerr *LimitError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.As(err, &lerr):
		return "limit " + lerr.Error()
	}
	return "unexpected " + err.Error()
}

// refScan is a second, plain implementation of the walk: recursive, over
// a whole message, with protowire's Consume functions. The streaming
// Scanner must agree with it on every input.
type refScan struct {
	s      *Schema
	values int
	counts [maxFieldCaps]int
	err    error
}

func refCheck(s *Schema, b []byte) (values int, err error) {
	r := &refScan{s: s}
	r.msg(s.root, b, 0, 0)
	return r.values, r.err
}

func (r *refScan) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *refScan) count(f *field, n int) bool {
	if f == nil || f.weight == 0 {
		return true
	}
	for range n {
		r.values += f.weight
		if r.s.values > 0 && r.values > r.s.values {
			r.fail(&LimitError{Message: r.s.name, What: "values", Limit: r.s.values})
			return false
		}
		if f.capped >= 0 {
			r.counts[f.capped]++
			if c := r.s.caps[f.capped]; r.counts[f.capped] > c.limit {
				r.fail(&LimitError{Message: r.s.name, Field: c.name, Limit: c.limit})
				return false
			}
		}
	}
	return true
}

// msg walks b as a message of n (nil: unknown), a group numbered group if
// not 0, at depth; it returns the bytes consumed (a group's up to and
// including its end), or -1 after an error.
func (r *refScan) msg(n *node, b []byte, depth int, group protowire.Number) int {
	start := len(b)
	for len(b) > 0 {
		num, wt, tn := protowire.ConsumeTag(b)
		if tn < 0 || num > protowire.MaxValidNumber {
			r.fail(malformed("tag"))
			return -1
		}
		b = b[tn:]
		if wt == protowire.EndGroupType {
			if num != group {
				r.fail(malformed("end group"))
				return -1
			}
			return start - len(b)
		}
		f := n.lookup(num)
		if f != nil && wt != f.elem && !(f.packable && f.list && wt == protowire.BytesType) {
			f = nil
		}
		var vn int
		switch wt {
		case protowire.VarintType:
			if !r.count(f, 1) {
				return -1
			}
			_, vn = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			if !r.count(f, 1) {
				return -1
			}
			_, vn = protowire.ConsumeFixed32(b)
		case protowire.Fixed64Type:
			if !r.count(f, 1) {
				return -1
			}
			_, vn = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			var v []byte
			v, vn = protowire.ConsumeBytes(b)
			if vn < 0 {
				break
			}
			switch {
			case f == nil:
			case f.msg != nil:
				if !r.count(f, 1) {
					return -1
				}
				if depth+1 > MaxDepth {
					r.fail(&LimitError{Message: r.s.name, What: "nesting depth", Limit: MaxDepth})
					return -1
				}
				if r.msg(f.msg, v, depth+1, 0) < 0 {
					return -1
				}
			case f.elem == protowire.BytesType:
				if !r.count(f, 1) {
					return -1
				}
			case f.elem == protowire.VarintType:
				for i, c := range v {
					if c < 0x80 && !r.count(f, 1) {
						return -1
					}
					if i == len(v)-1 && c >= 0x80 {
						r.fail(malformed("packed"))
						return -1
					}
				}
			default:
				width := 4
				if f.elem == protowire.Fixed64Type {
					width = 8
				}
				if len(v)%width != 0 {
					r.fail(malformed("packed fixed"))
					return -1
				}
				if !r.count(f, len(v)/width) {
					return -1
				}
			}
		case protowire.StartGroupType:
			var gn *node
			if f != nil && f.group {
				if !r.count(f, 1) {
					return -1
				}
				gn = f.msg
			}
			if depth+1 > MaxDepth {
				r.fail(&LimitError{Message: r.s.name, What: "nesting depth", Limit: MaxDepth})
				return -1
			}
			vn = r.msg(gn, b, depth+1, num)
			if vn < 0 {
				return -1
			}
		default:
			r.fail(malformed("wire type"))
			return -1
		}
		if vn < 0 {
			r.fail(malformed("value"))
			return -1
		}
		b = b[vn:]
	}
	if group != 0 {
		r.fail(malformed("group not ended"))
		return -1
	}
	return start
}

// decodedValues counts the values m holds after decoding, as Limits
// defines them (each value once, however often it occurred on the wire),
// and the entries of each field capped by s.
func decodedValues(s *Schema, m protoreflect.Message, caps map[protoreflect.FullName]int) int {
	n := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if _, ok := capIndex(s, fd.FullName()); ok {
			switch {
			case fd.IsList():
				caps[fd.FullName()] += v.List().Len()
			case fd.IsMap():
				caps[fd.FullName()] += v.Map().Len()
			}
		}
		switch {
		case fd.IsList():
			l := v.List()
			n += l.Len()
			if fd.Message() != nil {
				for i := range l.Len() {
					n += decodedValues(s, l.Get(i).Message(), caps)
				}
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				n++
				if fd.MapValue().Message() != nil {
					n += 1 + decodedValues(s, mv.Message(), caps)
				}
				return true
			})
		case fd.Message() != nil:
			n += 1 + decodedValues(s, v.Message(), caps)
		}
		return true
	})
	return n
}

func capIndex(s *Schema, name protoreflect.FullName) (int, bool) {
	for i, c := range s.caps {
		if c.name == name {
			return i, true
		}
	}
	return 0, false
}

// differential checks one input against s (whose message type is typ):
// the Scanner fed whole and in the pieces cuts makes, refScan and
// proto.Unmarshal must agree as the package doc says. It returns "" or
// what disagrees.
func differential(s *Schema, typ protoreflect.MessageType, b []byte, cuts []int) string {
	whole := s.Check(b)
	var sc Scanner
	sc.Reset(s, len(b))
	rest, prev := b, 0
	var err error
	for _, c := range cuts {
		if c <= prev || c >= len(b) {
			continue
		}
		if err = sc.Feed(rest[:c-prev]); err != nil {
			break
		}
		rest, prev = rest[c-prev:], c
	}
	if err == nil {
		if err = sc.Feed(rest); err == nil {
			err = sc.Close()
		}
	}
	if outcome(err) != outcome(whole) {
		return fmt.Sprintf("in pieces %v: %s, whole: %s", cuts, outcome(err), outcome(whole))
	}
	refValues, refErr := refCheck(s, b)
	if outcome(refErr) != outcome(whole) {
		return fmt.Sprintf("Check: %s, the plain walk: %s", outcome(whole), outcome(refErr))
	}
	if whole == nil && refValues != sc.Values() {
		return fmt.Sprintf("Scanner counted %d values, the plain walk %d", sc.Values(), refValues)
	}
	m := typ.New().Interface()
	panicked, uerr := referenceUnmarshal(b, m)
	if panicked {
		// protobuf-go's own decoder cannot decode it: nothing to compare
		// with (see referenceUnmarshal).
		return ""
	}
	switch {
	case errors.Is(whole, ErrMalformed) && uerr == nil:
		return fmt.Sprintf("Check: %v, but proto.Unmarshal decodes it", whole)
	case whole == nil && uerr == nil:
		caps := map[protoreflect.FullName]int{}
		if n := decodedValues(s, m.ProtoReflect(), caps); n > sc.Values() || s.values > 0 && n > s.values {
			return fmt.Sprintf("decoded %d values, Check counted %d (limit %d)", n, sc.Values(), s.values)
		}
		for _, c := range s.caps {
			if caps[c.name] > c.limit {
				return fmt.Sprintf("decoded %d %s entries, limit %d", caps[c.name], c.name, c.limit)
			}
		}
	}
	return ""
}

// protoregistryFind finds a generated message type by name.
func protoregistryFind(name protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(name)
}

// referenceUnmarshal decodes b into m with protobuf-go, the reference the
// fuzz test compares with, and reports whether that panicked. protobuf-go
// v1.36.12's reflective decoder, which dynamic types such as Node use,
// panics ("cannot convert nil to map key") on a map entry whose key comes
// first with its own wire type and then again with another (the seed
// testdata/fuzz/FuzzScan/6e3a2b3bfa7f369f); the generated code NRI's types
// use decodes the same bytes. The scanner is not at fault there.
func referenceUnmarshal(b []byte, m proto.Message) (panicked bool, err error) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return false, proto.UnmarshalOptions{AllowPartial: true}.Unmarshal(b, m)
}
