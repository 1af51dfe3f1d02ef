package ocispec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// ChangeKind tells how a field differs between two specs.
type ChangeKind int

// Kinds of change.
const (
	// Added: the field is set only in the second spec.
	Added ChangeKind = iota + 1
	// Removed: the field is set only in the first spec.
	Removed
	// Modified: the field has different values.
	Modified
)

// String returns "added", "removed" or "modified".
func (k ChangeKind) String() string {
	switch k {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Modified:
		return "modified"
	}
	return fmt.Sprintf("ChangeKind(%d)", int(k))
}

// Change is one difference between two specs.
type Change struct {
	// Path names the field with the spec's JSON names; entries of lists
	// with a natural key are named by it ("process.env[FOO]",
	// "mounts[/data]", "linux.devices[/dev/fuse]", "linux.namespaces[network]",
	// "process.rlimits[RLIMIT_NOFILE]", "linux.resources.hugepageLimits[2MB]"),
	// map entries by their key ("annotations[k]"), other list entries by
	// index ("hooks.prestart[0]"). Since mount order matters, a change in
	// the relative order of the mounts both specs have is reported as
	// "mounts.order", with the destinations in order as JSON lists.
	Path string
	// Kind is the kind of change.
	Kind ChangeKind
	// Old and New are the values before and after ("" when absent). Strings
	// and numbers are given as is; lists of plain values and compound
	// entries (a mount, a device) as JSON.
	Old, New string
}

// String formats the change as "+ path: new", "- path: old" or
// "~ path: old -> new".
func (c Change) String() string {
	switch c.Kind {
	case Added:
		return "+ " + c.Path + ": " + c.New
	case Removed:
		return "- " + c.Path + ": " + c.Old
	default:
		return "~ " + c.Path + ": " + c.Old + " -> " + c.New
	}
}

// Diff returns the field-by-field differences from before to after, in the
// spec's field order (map entries and keyed list entries sorted by key). A
// nil spec is treated as empty. Unset fields and zero values that are not
// behind a pointer count as absent.
func Diff(before, after *rspec.Spec) []Change {
	b, a := flatten(before), flatten(after)
	addOrderChanges(b, a)
	union := maps.Clone(b.leaves)
	maps.Copy(union, a.leaves)
	paths := slices.SortedFunc(maps.Keys(union), func(x, y string) int {
		return cmp.Or(compareSegs(union[x].segs, union[y].segs), strings.Compare(x, y))
	})
	var changes []Change
	for _, p := range paths {
		old, inB := b.leaves[p]
		cur, inA := a.leaves[p]
		switch {
		case !inB:
			changes = append(changes, Change{Path: p, Kind: Added, New: cur.value})
		case !inA:
			changes = append(changes, Change{Path: p, Kind: Removed, Old: old.value})
		case old.value != cur.value:
			changes = append(changes, Change{Path: p, Kind: Modified, Old: old.value, New: cur.value})
		}
	}
	return changes
}

// addOrderChanges adds, for each list whose order matters (mounts), a leaf
// with the list's keys in order to both sides, if the entries both sides
// have are in a different order.
func addOrderChanges(b, a flat) {
	for path, ob := range b.orders {
		oa, ok := a.orders[path]
		if !ok {
			continue
		}
		inA := map[string]bool{}
		for _, k := range oa.keys {
			inA[k] = true
		}
		inB := map[string]bool{}
		var commonB, commonA []string
		for _, k := range ob.keys {
			inB[k] = true
			if inA[k] {
				commonB = append(commonB, k)
			}
		}
		for _, k := range oa.keys {
			if inB[k] {
				commonA = append(commonA, k)
			}
		}
		if slices.Equal(commonB, commonA) {
			continue
		}
		p := path + ".order"
		b.leaves[p] = leaf{ob.segs, jsonValue(reflect.ValueOf(ob.keys))}
		a.leaves[p] = leaf{oa.segs, jsonValue(reflect.ValueOf(oa.keys))}
	}
}

// seg is one step of a field path, used for ordering: a struct field or
// list index (idx), or a map or list key.
type seg struct {
	idx   int
	key   string
	isKey bool
}

// compareSegs orders paths by struct field order, index and key.
func compareSegs(a, b []seg) int {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x.isKey != y.isKey {
			if x.isKey {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(x.idx, y.idx); c != 0 {
			return c
		}
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
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

// flat is a flattened spec: its leaves, and the order of its ordered
// keyed lists, by path.
type flat struct {
	leaves map[string]leaf
	orders map[string]order
}

// orderedLists are the keyed lists whose order matters.
func orderedList(path string) bool {
	return path == "mounts"
}

// keyedList names the lists whose entries are identified by a key, and
// how to get an entry's key and value.
func keyedList(path string) func(reflect.Value) (key, value string) {
	byField := func(name string) func(reflect.Value) (string, string) {
		return func(v reflect.Value) (string, string) {
			return v.FieldByName(name).String(), jsonValue(v)
		}
	}
	switch path {
	case "process.env":
		return func(v reflect.Value) (string, string) {
			name, value, _ := strings.Cut(v.String(), "=")
			return name, value
		}
	case "mounts":
		return byField("Destination")
	case "linux.devices":
		return byField("Path")
	case "linux.namespaces":
		return byField("Type")
	case "process.rlimits":
		return byField("Type")
	case "linux.resources.hugepageLimits":
		return byField("Pagesize")
	}
	return nil
}

// flatten turns a spec into its leaves, by path.
func flatten(spec *rspec.Spec) flat {
	out := flat{leaves: map[string]leaf{}, orders: map[string]order{}}
	if spec != nil {
		walk(out, reflect.ValueOf(spec).Elem(), "", nil, false)
	}
	return out
}

// walk flattens v at path into out. Zero scalars are skipped unless they
// are explicitly set (behind a pointer, or a map entry).
func walk(out flat, v reflect.Value, path string, segs []seg, explicit bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walk(out, v.Elem(), path, segs, true)
		}
	case reflect.Interface:
		if !v.IsNil() {
			out.leaves[path] = leaf{segs, jsonValue(v)}
		}
	case reflect.Struct:
		walkStruct(out, v, path, segs)
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(fmt.Sprint(x), fmt.Sprint(y)) })
		for _, k := range keys {
			ks := fmt.Sprint(k)
			walk(out, v.MapIndex(k), path+"["+ks+"]", append(slices.Clip(segs), seg{key: ks, isKey: true}), true)
		}
	case reflect.Slice, reflect.Array:
		walkList(out, v, path, segs)
	default:
		if explicit || !v.IsZero() {
			out.leaves[path] = leaf{segs, fmt.Sprint(v.Interface())}
		}
	}
}

// walkStruct flattens the exported fields of a struct, named by their
// JSON names; embedded structs contribute their fields directly.
func walkStruct(out flat, v reflect.Value, path string, segs []seg) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		s := append(slices.Clip(segs), seg{idx: i})
		if f.Anonymous {
			walk(out, v.Field(i), path, s, false)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		walk(out, v.Field(i), p, s, false)
	}
}

// walkList flattens a list: keyed lists by entry key, lists of compound
// values by index, lists of plain values as one JSON value.
func walkList(out flat, v reflect.Value, path string, segs []seg) {
	if v.Len() == 0 {
		return
	}
	if keyOf := keyedList(path); keyOf != nil {
		seen := map[string]int{}
		var keys []string
		for i := range v.Len() {
			key, value := keyOf(v.Index(i))
			if seen[key]++; seen[key] > 1 {
				key = fmt.Sprintf("%s#%d", key, seen[key])
			}
			keys = append(keys, key)
			out.leaves[path+"["+key+"]"] = leaf{append(slices.Clip(segs), seg{key: key, isKey: true}), value}
		}
		if orderedList(path) {
			out.orders[path] = order{segs, keys}
		}
		return
	}
	switch v.Type().Elem().Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		for i := range v.Len() {
			out.leaves[fmt.Sprintf("%s[%d]", path, i)] = leaf{append(slices.Clip(segs), seg{idx: i}), jsonValue(v.Index(i))}
		}
	default:
		out.leaves[path] = leaf{segs, jsonValue(v)}
	}
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
