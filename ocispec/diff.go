package ocispec

import (
	"cmp"
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

// MarshalText encodes the kind as its String, so that a Change's JSON form
// reads "kind": "added".
func (k ChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a kind from its String.
func (k *ChangeKind) UnmarshalText(text []byte) error {
	for c := Added; c <= Modified; c++ {
		if c.String() == string(text) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("ocispec: unknown change kind %q", text)
}

// Change is one difference between two specs ([Diff]) or two sets of
// fields ([DiffFields]).
type Change struct {
	// Path names the field with the spec's JSON names; entries of lists
	// with a natural key are named by it ("process.env[FOO]",
	// "mounts[/data]", "linux.devices[/dev/fuse]", "linux.namespaces[network]",
	// "process.rlimits[RLIMIT_NOFILE]", "linux.resources.hugepageLimits[2MB]";
	// a key that occurs again is numbered, "mounts[/data#2]"), map entries
	// by their key ("annotations[k]"), other list entries by index
	// ("hooks.prestart[0]"). Since mount order matters, a change in the
	// relative order of the mounts both specs have is reported as
	// "mounts.order", with the destinations in order as JSON lists. The
	// paths of [Fields] follow the same rules with the protocol's names.
	Path string `json:"path"`
	// Kind is the kind of change.
	Kind ChangeKind `json:"kind"`
	// Old and New are the values before and after ("" when absent). Strings
	// and numbers are given as is; lists of plain values and compound
	// entries (a mount, a device) as JSON.
	Old string `json:"old"`
	New string `json:"new"`
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
	b, a := flattenSpec(before), flattenSpec(after)
	addOrderChanges(b, a)
	union := maps.Clone(b.leaves)
	maps.Copy(union, a.leaves)
	paths := slices.SortedFunc(maps.Keys(union), func(x, y string) int {
		return cmp.Or(compareSegs(union[x].segs, union[y].segs), strings.Compare(x, y))
	})
	return diffPaths(paths, values(b.leaves), values(a.leaves))
}

// DiffFields returns the differences between two sets of fields by path,
// such as two results of [Fields], ordered by path. A field is added or
// removed when its path is in only one set, even if its value there is "".
func DiffFields(before, after map[string]string) []Change {
	union := maps.Clone(before)
	maps.Copy(union, after)
	return diffPaths(slices.Sorted(maps.Keys(union)), before, after)
}

// diffPaths compares the fields at paths, in that order.
func diffPaths(paths []string, before, after map[string]string) []Change {
	var changes []Change
	for _, p := range paths {
		old, inB := before[p]
		cur, inA := after[p]
		switch {
		case !inB:
			changes = append(changes, Change{Path: p, Kind: Added, New: cur})
		case !inA:
			changes = append(changes, Change{Path: p, Kind: Removed, Old: old})
		case old != cur:
			changes = append(changes, Change{Path: p, Kind: Modified, Old: old, New: cur})
		}
	}
	return changes
}

// flattenSpec flattens a spec with JSON field names, compound values and
// lists of plain values as JSON.
func flattenSpec(spec *rspec.Spec) flattener {
	f := flattener{leaves: map[string]leaf{}, orders: map[string]order{}, wholeLists: true}
	if spec != nil {
		walk(&f, specNode{reflect.ValueOf(spec).Elem()}, "", nil)
	}
	return f
}

// values returns the values of leaves, by path.
func values(leaves map[string]leaf) map[string]string {
	out := make(map[string]string, len(leaves))
	for p, l := range leaves {
		out[p] = l.value
	}
	return out
}

// addOrderChanges adds, for each list whose order matters (mounts), a leaf
// with the list's keys in order to both sides, if the entries both sides
// have are in a different order.
func addOrderChanges(b, a flattener) {
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
