package ocispec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file holds the one flattener behind Diff and Fields. It walks a
// tree of fields, an OCI spec through reflect or an NRI message through
// protoreflect, and names every set field by its path, with the same path
// rules and the same table of list keys for both. The two trees differ in
// their field names (the spec's JSON names, the protocol's field names) and
// in how a value that is not walked further is rendered (JSON for the spec,
// "field=value ..." for the protocol); each tree's node type knows its own.

// node is one value of a tree being flattened; N is the tree's node type.
type node[N any] interface {
	// shape tells how the flattener walks the node.
	shape() shape
	// each calls yield for the node's children: a record's set fields in
	// field order, with their names ("" for an embedded record whose fields
	// belong to the parent); a map's entries sorted by key, with the key as
	// name; a list's elements.
	each(yield func(i int, name string, child N))
	// field returns the field of a record whose name, ignoring case and
	// underscores, is name, set or not; false if the record has none.
	field(name string) (N, bool)
	// text renders the node as one value; for an entry of a keyed list,
	// skip names the key field.
	text(skip string) string
}

// shape is how a node is walked.
type shape uint8

const (
	leafShape   shape = iota // one value
	recordShape              // fields, by name
	mapShape                 // entries, by key
	listShape                // elements, by key or index
)

// listKey returns the field (lower case, without underscores) whose value
// keys the entries of the lists named name, such as "destination" for
// mounts; "" for lists whose entries are named by index. Environment lists
// are keyed by variable name (see entry).
func listKey(name string) string {
	switch normalize(name) {
	case "mounts":
		return "destination"
	case "devices":
		return "path"
	case "rlimits", "namespaces":
		return "type"
	case "cdidevices":
		return "name"
	case "hugepagelimits":
		return "pagesize"
	case "env":
		return "key"
	}
	return ""
}

// orderedList reports whether the order of the keyed list named name
// matters (and a change of it is a change, see Diff).
func orderedList(name string) bool { return name == "mounts" }

// normalize folds a field name for comparison across naming styles:
// "page_size", "pageSize" and "Pagesize" are all "pagesize".
func normalize(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

// seg is one step of a field path, used for ordering: a struct field or
// list index (idx), or a map or list key.
type seg struct {
	idx   int
	key   string
	isKey bool
}

// leaf is one flattened field.
type leaf struct {
	segs  []seg
	value string
}

// order is the sequence of keys of a keyed list whose order matters.
type order struct {
	segs []seg
	keys []string
}

// flattener collects the leaves of one tree.
type flattener struct {
	leaves map[string]leaf
	orders map[string]order
	// emptyRecord, if not "", is the value of a set record (not the root)
	// that has no set fields.
	emptyRecord string
	// wholeLists renders a list of plain values that is not keyed as one
	// value rather than entry by entry.
	wholeLists bool
}

// walk flattens n at path into f.
func walk[N node[N]](f *flattener, n N, path string, segs []seg) {
	switch n.shape() {
	case leafShape:
		f.leaves[path] = leaf{segs, n.text("")}
	case recordShape:
		before := len(f.leaves)
		n.each(func(i int, name string, c N) {
			p := path
			switch {
			case path == "":
				p = name
			case name != "":
				p = path + "." + name
			}
			walk(f, c, p, append(slices.Clip(segs), seg{idx: i}))
		})
		if f.emptyRecord != "" && path != "" && len(f.leaves) == before {
			f.leaves[path] = leaf{segs, f.emptyRecord}
		}
	case mapShape:
		n.each(func(_ int, key string, c N) {
			walk(f, c, path+"["+key+"]", append(slices.Clip(segs), seg{key: key, isKey: true}))
		})
	case listShape:
		walkList(f, n, path, segs)
	}
}

// walkList flattens a list: keyed lists by entry key, other lists by index,
// or as one value (wholeLists).
func walkList[N node[N]](f *flattener, n N, path string, segs []seg) {
	name := path[strings.LastIndexByte(path, '.')+1:]
	keyField := listKey(name)
	if keyField == "" && f.wholeLists {
		elems, records := 0, false
		n.each(func(_ int, _ string, e N) { elems, records = elems+1, records || e.shape() != leafShape })
		if !records {
			if elems > 0 {
				f.leaves[path] = leaf{segs, n.text("")}
			}
			return
		}
	}
	seen := map[string]int{}
	var keys []string
	n.each(func(i int, _ string, e N) {
		key, value, ok := entry(e, keyField, normalize(name) == "env")
		if !ok {
			f.leaves[fmt.Sprintf("%s[%d]", path, i)] = leaf{append(slices.Clip(segs), seg{idx: i}), e.text("")}
			return
		}
		if seen[key]++; seen[key] > 1 {
			key = fmt.Sprintf("%s#%d", key, seen[key])
		}
		keys = append(keys, key)
		f.leaves[path+"["+key+"]"] = leaf{append(slices.Clip(segs), seg{key: key, isKey: true}), value}
	})
	if orderedList(name) && len(keys) > 0 {
		f.orders[path] = order{segs, keys}
	}
}

// entry returns the key and value of a list entry keyed by keyField, and
// false if it is not keyed. An environment entry is a record with a key and
// a value, or "NAME=VALUE".
func entry[N node[N]](e N, keyField string, env bool) (key, value string, ok bool) {
	k, keyed := e.field(keyField)
	switch {
	case keyed && env:
		if v, ok := e.field("value"); ok {
			value = v.text("")
		}
		return k.text(""), value, true
	case keyed:
		return k.text(""), e.text(keyField), true
	case env:
		key, value, _ = strings.Cut(e.text(""), "=")
		return key, value, true
	}
	return "", "", false
}

// specNode is a value of an OCI spec, walked through reflect.
type specNode struct{ v reflect.Value }

// newSpecNode returns the node for v, with pointers followed; false for a
// nil pointer or interface.
func newSpecNode(v reflect.Value) (specNode, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return specNode{}, false
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Interface && v.IsNil() {
		return specNode{}, false
	}
	return specNode{v}, true
}

func (n specNode) shape() shape {
	switch n.v.Kind() {
	case reflect.Struct:
		return recordShape
	case reflect.Map:
		return mapShape
	case reflect.Slice, reflect.Array:
		return listShape
	}
	return leafShape
}

// each yields a struct's exported fields by JSON name. Zero values that
// are not behind a pointer count as unset; map entries and list elements
// are always set.
func (n specNode) each(yield func(int, string, specNode)) {
	v := n.v
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fv := v.Field(i)
			if !f.IsExported() || name == "-" || (fv.Kind() != reflect.Pointer && fv.Kind() != reflect.Struct && fv.IsZero()) {
				continue
			}
			c, ok := newSpecNode(fv)
			switch {
			case !ok:
				continue
			case f.Anonymous:
				name = ""
			case name == "":
				name = f.Name
			}
			yield(i, name, c)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range keys {
			if c, ok := newSpecNode(v.MapIndex(k)); ok {
				yield(0, fmt.Sprint(k), c)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if c, ok := newSpecNode(v.Index(i)); ok {
				yield(i, "", c)
			}
		}
	}
}

func (n specNode) field(name string) (specNode, bool) {
	if n.v.Kind() != reflect.Struct {
		return specNode{}, false
	}
	t := n.v.Type()
	for i := range t.NumField() {
		if normalize(t.Field(i).Name) == name {
			return specNode{n.v.Field(i)}, true
		}
	}
	return specNode{}, false
}

// text renders scalars as they print and everything else, keyed entries
// included, as JSON.
func (n specNode) text(string) string {
	switch n.v.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return jsonValue(n.v)
	}
	return fmt.Sprint(n.v.Interface())
}

// jsonValue renders v as compact JSON without HTML escaping.
func jsonValue(v reflect.Value) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return fmt.Sprint(v.Interface())
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// Fields flattens an NRI message (a Container, a ContainerAdjustment, a
// ContainerUpdate, ...) into its set fields, by path, with a readable
// value. Paths follow the rules of [Change.Path] with the protocol's
// field names:
//
//   - nested messages by field name: "linux.resources.memory.limit"; a set
//     message with no set fields has the value "{}";
//   - map entries by key: "annotations[k]", "linux.sysctl[net.core.somaxconn]";
//   - environment entries ("KEY=VALUE", or an adjustment's KeyValue) by
//     key: "env[KEY]" = "VALUE";
//   - entries of lists with a natural key by that key, as one value:
//     "mounts[/data]" = "type=bind source=/srv options=[rbind ro]", also
//     "linux.devices[/dev/x]", "rlimits[RLIMIT_NOFILE]",
//     "linux.namespaces[network]", "CDI_devices[vendor.com/c=d]" (an entry
//     with nothing but its key has the value "(present)"); a key that
//     occurs again is numbered ("mounts[/data#2]");
//   - other list entries by index: "hooks.prestart[0]", "args[1]";
//   - the Optional* wrappers by their value, enums by name.
//
// Keys with a removal marker stay as they are ("env[-FOO]").
func Fields(m proto.Message) map[string]string {
	f := flattener{leaves: map[string]leaf{}, orders: map[string]order{}, emptyRecord: "{}"}
	if m != nil && m.ProtoReflect().IsValid() {
		walk(&f, protoNode{msg: m.ProtoReflect()}, "", nil)
	}
	out := make(map[string]string, len(f.leaves))
	for p, l := range f.leaves {
		out[p] = l.value
	}
	return out
}

// protoNode is a value of an NRI message, walked through protoreflect: a
// message (msg set), a map or list field (fd and v), or a scalar.
type protoNode struct {
	msg protoreflect.Message
	// opaque makes a message one value (a map entry's).
	opaque bool
	fd     protoreflect.FieldDescriptor
	v      protoreflect.Value
}

func (n protoNode) shape() shape {
	switch {
	case n.msg != nil:
		if _, ok := wrapped(n.msg); ok || n.opaque {
			return leafShape
		}
		return recordShape
	case n.fd.IsMap():
		return mapShape
	case n.fd.IsList():
		return listShape
	}
	return leafShape
}

func (n protoNode) each(yield func(int, string, protoNode)) {
	switch {
	case n.msg != nil:
		n.msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			c := protoNode{fd: fd, v: v}
			if !fd.IsMap() && !fd.IsList() && fd.Kind() == protoreflect.MessageKind {
				c = protoNode{msg: v.Message()}
			}
			yield(fd.Index(), string(fd.Name()), c)
			return true
		})
	case n.fd.IsMap():
		n.v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			c := protoNode{fd: n.fd.MapValue(), v: v}
			if n.fd.MapValue().Kind() == protoreflect.MessageKind {
				c = protoNode{msg: v.Message(), opaque: true}
			}
			yield(0, k.String(), c)
			return true
		})
	case n.fd.IsList():
		l := n.v.List()
		for i := range l.Len() {
			c := protoNode{fd: n.fd, v: l.Get(i)}
			if n.fd.Kind() == protoreflect.MessageKind {
				c = protoNode{msg: l.Get(i).Message(), opaque: true}
			}
			yield(i, "", c)
		}
	}
}

func (n protoNode) field(name string) (protoNode, bool) {
	if n.msg == nil {
		return protoNode{}, false
	}
	fields := n.msg.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); normalize(string(fd.Name())) == name {
			return protoNode{fd: fd, v: n.msg.Get(fd)}, true
		}
	}
	return protoNode{}, false
}

// present is the value of a keyed entry that has nothing but its key
// (such as a CDI device).
const present = "(present)"

// text renders a message as "field=value ...", leaving out skip; an entry
// with nothing but its key is "(present)".
func (n protoNode) text(skip string) string {
	if n.msg == nil {
		return scalar(n.fd, n.v)
	}
	if w, ok := wrapped(n.msg); ok {
		return w
	}
	s := compact(n.msg, skip)
	if s == "" && skip != "" {
		return present
	}
	return s
}

// wrapped returns the value of an Optional* wrapper message.
func wrapped(m protoreflect.Message) (string, bool) {
	d := m.Descriptor()
	if !strings.HasPrefix(string(d.Name()), "Optional") || d.Fields().Len() != 1 {
		return "", false
	}
	f := d.Fields().Get(0)
	v := m.Get(f)
	if f.IsList() {
		return listText(f, v.List()), true
	}
	if f.Kind() == protoreflect.Uint32Kind && d.Name() == "OptionalFileMode" {
		return fmt.Sprintf("0%o", v.Uint()), true
	}
	return scalar(f, v), true
}

// scalar renders a scalar field's value, an enum by name.
func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.Kind() == protoreflect.EnumKind {
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	}
	return v.String()
}

// listText renders a list as "[a b ...]", messages as "{field=value ...}".
func listText(fd protoreflect.FieldDescriptor, l protoreflect.List) string {
	parts := make([]string, 0, l.Len())
	for i := range l.Len() {
		if fd.Kind() == protoreflect.MessageKind {
			parts = append(parts, "{"+compact(l.Get(i).Message(), "")+"}")
		} else {
			parts = append(parts, scalar(fd, l.Get(i)))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// compact renders a message on one line as "field=value ...", leaving out
// the field whose normalized name is skip.
func compact(m protoreflect.Message, skip string) string {
	var parts []string
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) || (skip != "" && normalize(string(fd.Name())) == skip) {
			continue
		}
		v := m.Get(fd)
		var s string
		switch {
		case fd.IsMap():
			var kv []string
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				kv = append(kv, k.String()+":"+mv.String())
				return true
			})
			slices.Sort(kv)
			s = "{" + strings.Join(kv, " ") + "}"
		case fd.IsList():
			s = listText(fd, v.List())
		case fd.Kind() == protoreflect.MessageKind:
			if w, ok := wrapped(v.Message()); ok {
				s = w
			} else {
				s = "{" + compact(v.Message(), "") + "}"
			}
		default:
			s = scalar(fd, v)
		}
		parts = append(parts, string(fd.Name())+"="+s)
	}
	return strings.Join(parts, " ")
}
