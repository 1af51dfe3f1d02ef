// Package protodiff converts messages between two Go packages compiled
// from wire-compatible schemas (upstream's api and nrikit's) and compares
// messages field by field with a readable diff.
package protodiff

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Convert decodes the wire encoding of src into dst, a message of the
// same schema compiled into another package. Unknown fields are an error:
// the schemas must agree on everything src sets.
func Convert[D proto.Message](src proto.Message, dst D) (D, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(src)
	if err != nil {
		return dst, fmt.Errorf("protodiff: encoding %T: %w", src, err)
	}
	if err := proto.Unmarshal(b, dst); err != nil {
		return dst, fmt.Errorf("protodiff: decoding into %T: %w", dst, err)
	}
	if u := dst.ProtoReflect().GetUnknown(); len(u) != 0 {
		return dst, fmt.Errorf("protodiff: %T has %d bytes of unknown fields after conversion", dst, len(u))
	}
	return dst, nil
}

// Normalize returns a copy of m without empty sub-messages: upstream's
// runtime answers with empty Hooks, LinuxResources, LinuxMemory and the
// like where nothing was set, which means the same as no message at all.
// Empty Optional* wrappers are kept: they set a value (zero).
func Normalize[M proto.Message](m M) M {
	c := proto.Clone(m).(M)
	prune(c.ProtoReflect())
	return c
}

// prune clears the empty, non-Optional sub-messages of m and reports
// whether m is empty afterwards.
func prune(m protoreflect.Message) bool {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				prune(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				prune(mv.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			if prune(v.Message()) && !isWrapper(fd.Message()) {
				m.Clear(fd)
			}
		}
		return true
	})
	empty := true
	m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { empty = false; return false })
	return empty
}

func isWrapper(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.Name()), "Optional")
}

// Diff compares want and got, messages of the same type, field by field
// and returns one line per difference ("adjust.linux.oom_score_adj.value:
// want -500, got 0"); none if they are equal.
func Diff(want, got proto.Message) []string {
	w, g := want.ProtoReflect(), got.ProtoReflect()
	if w.Descriptor().FullName() != g.Descriptor().FullName() {
		return []string{fmt.Sprintf("different types: want %s, got %s", w.Descriptor().FullName(), g.Descriptor().FullName())}
	}
	var out []string
	diffMessage(&out, "", w, g)
	return out
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func diffMessage(out *[]string, path string, w, g protoreflect.Message) {
	fields := w.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := join(path, string(fd.Name()))
		switch {
		case fd.IsList():
			diffList(out, p, fd, w.Get(fd).List(), g.Get(fd).List())
		case fd.IsMap():
			diffMap(out, p, fd, w.Get(fd).Map(), g.Get(fd).Map())
		case fd.Message() != nil:
			ws, gs := w.Has(fd), g.Has(fd)
			switch {
			case !ws && !gs:
			case !gs:
				*out = append(*out, fmt.Sprintf("%s: want %s, got <unset>", p, format(fd, w.Get(fd))))
			case !ws:
				*out = append(*out, fmt.Sprintf("%s: want <unset>, got %s", p, format(fd, g.Get(fd))))
			default:
				diffMessage(out, p, w.Get(fd).Message(), g.Get(fd).Message())
			}
		default:
			if !equalScalar(w.Get(fd), g.Get(fd)) {
				*out = append(*out, fmt.Sprintf("%s: want %s, got %s", p, format(fd, w.Get(fd)), format(fd, g.Get(fd))))
			}
		}
	}
}

func diffList(out *[]string, path string, fd protoreflect.FieldDescriptor, w, g protoreflect.List) {
	n := max(w.Len(), g.Len())
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case i >= g.Len():
			*out = append(*out, fmt.Sprintf("%s: want %s, got <missing>", p, format(fd, w.Get(i))))
		case i >= w.Len():
			*out = append(*out, fmt.Sprintf("%s: want <missing>, got %s", p, format(fd, g.Get(i))))
		case fd.Message() != nil:
			diffMessage(out, p, w.Get(i).Message(), g.Get(i).Message())
		case !equalScalar(w.Get(i), g.Get(i)):
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", p, format(fd, w.Get(i)), format(fd, g.Get(i))))
		}
	}
}

func diffMap(out *[]string, path string, fd protoreflect.FieldDescriptor, w, g protoreflect.Map) {
	var keys []protoreflect.MapKey
	seen := map[string]bool{}
	for _, m := range []protoreflect.Map{w, g} {
		m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			if s := k.String(); !seen[s] {
				seen[s] = true
				keys = append(keys, k)
			}
			return true
		})
	}
	slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return strings.Compare(a.String(), b.String()) })
	vd := fd.MapValue()
	for _, k := range keys {
		p := fmt.Sprintf("%s[%q]", path, k.String())
		wv, gv := w.Get(k), g.Get(k)
		switch {
		case !g.Has(k):
			*out = append(*out, fmt.Sprintf("%s: want %s, got <missing>", p, format(vd, wv)))
		case !w.Has(k):
			*out = append(*out, fmt.Sprintf("%s: want <missing>, got %s", p, format(vd, gv)))
		case vd.Message() != nil:
			diffMessage(out, p, wv.Message(), gv.Message())
		case !equalScalar(wv, gv):
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", p, format(vd, wv), format(vd, gv)))
		}
	}
}

func equalScalar(a, b protoreflect.Value) bool {
	if ab, ok := a.Interface().([]byte); ok {
		bb, _ := b.Interface().([]byte)
		return bytes.Equal(ab, bb)
	}
	return a.Equal(b)
}

func format(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch {
	case fd.Message() != nil:
		return "{" + prototext.MarshalOptions{}.Format(v.Message().Interface()) + "}"
	case fd.Enum() != nil:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return fmt.Sprint(v.Enum())
	case fd.Kind() == protoreflect.StringKind:
		return fmt.Sprintf("%q", v.String())
	}
	return fmt.Sprint(v.Interface())
}
