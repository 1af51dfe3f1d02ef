package merge

import (
	"slices"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// mapFamily merges a keyed field carried as a map (annotations, sysctls,
// network devices). A key marked for removal that the same plugin also
// sets transfers ownership to the plugin (so it may override another
// plugin's entry); both the removal marker and the new value are passed
// on. A removal the plugin does not follow with a value is passed on
// without changing ownership or the container view.
type mapFamily[V any] struct {
	field  api.Field
	marker V // value sent with a removal marker
	maps   mapAccess[V]
	clone  func(V) V
}

// mapAccess reaches the maps a mapFamily merges into. Its implementations
// are pointer-sized structs, so a family is built without allocating.
type mapAccess[V any] interface {
	reply() map[string]V // merged adjustment's map (allocating)
	view() map[string]V  // container view's map (owned by the Create, allocating)
}

func (f mapFamily[V]) merge(tx *txn, id, plugin string, in map[string]V) error {
	if len(in) == 0 {
		return nil
	}
	var removed map[string]bool // allocated for the first removal
	set := make([]string, 0, len(in))
	for k := range in {
		if key, marked := api.IsMarkedForRemoval(k); marked {
			if removed == nil {
				removed = make(map[string]bool)
			}
			removed[key] = true
		} else {
			set = append(set, k)
		}
	}
	slices.Sort(set)
	for _, k := range set {
		if removed[k] {
			delete(removed, k)
			tx.clear(entryKey(id, f.field, k), plugin)
			tx.then(func() {
				delete(f.maps.view(), k)
				f.maps.reply()[api.MarkForRemoval(k)] = f.marker
			})
		}
		if err := tx.claim(entryKey(id, f.field, k), plugin); err != nil {
			return err
		}
		v := in[k]
		tx.then(func() {
			f.maps.view()[k] = f.clone(v)
			f.maps.reply()[k] = v
		})
	}
	for _, k := range sortedKeys(removed) {
		tx.then(func() { f.maps.reply()[api.MarkForRemoval(k)] = f.marker })
	}
	return nil
}

// listFamily merges a keyed field carried as a list (mounts, environment
// variables, devices). An entry marked for removal drops the entry with
// that key from the merged result (making the plugin its owner, so it may
// set it again) and from the container view; a set entry replaces the
// view's entry with that key. Removals of keys the plugin does not set
// again are passed on to the runtime only if forwardRemovals is set
// (upstream does this for mounts, not for environment variables or
// devices).
type listFamily[E proto.Message] struct {
	field           api.Field
	key             func(E) string
	forwardRemovals bool
	lists           listAccess[E]
}

// listAccess reaches the lists a listFamily merges into. Its
// implementations are pointer-sized structs, so a family is built without
// allocating.
type listAccess[E proto.Message] interface {
	current() []E // merged adjustment's list (not allocating)
	reply() *[]E  // merged adjustment's list (allocating)
	// viewDrop removes the view's entries whose keys drop holds, copying
	// the view's list first if there are any.
	viewDrop(drop dropKeys[E])
	// viewAdd appends e to the view's list (copying the list first, and
	// e if the view keeps it).
	viewAdd(e E)
}

func (f listFamily[E]) merge(tx *txn, id, plugin string, in []E) error {
	if len(in) == 0 {
		return nil
	}
	var (
		set      = in // the common case: every entry a plain setting, no copy
		removals []E
		removed  map[string]bool // allocated for the first removal
	)
	if slices.ContainsFunc(in, f.special) {
		set = nil
		for _, e := range in {
			if isNil(e) {
				continue
			}
			if key, marked := api.IsMarkedForRemoval(f.key(e)); marked {
				if removed == nil {
					removed = make(map[string]bool)
				}
				removed[key] = true
				removals = append(removals, e)
			} else {
				set = append(set, e)
			}
		}
	}
	if len(set) == 0 && len(removals) == 0 {
		return nil
	}
	drop := newDropKeys(removed, set, f.key)

	dropped := false
	for _, e := range f.lists.current() {
		if key := f.key(e); removed[key] {
			tx.clear(entryKey(id, f.field, key), plugin)
			dropped = true
		}
	}
	for _, e := range set {
		if err := tx.claim(entryKey(id, f.field, f.key(e)), plugin); err != nil {
			return err
		}
	}
	add := set
	if f.forwardRemovals {
		var forwarded map[string]bool
		for _, e := range removals {
			key, _ := api.IsMarkedForRemoval(f.key(e))
			if !drop.replaced(key) && !forwarded[key] {
				if forwarded == nil {
					forwarded = make(map[string]bool)
				}
				forwarded[key] = true
				add = append(add, e)
			}
		}
	}
	// One action does it all: the reply's drops, the view's drops, then
	// the additions to both.
	tx.then(func() {
		if dropped {
			r := f.lists.reply()
			*r = slices.DeleteFunc(*r, func(e E) bool { return removed[f.key(e)] })
		}
		f.lists.viewDrop(drop)
		if len(add) == 0 {
			return
		}
		r := f.lists.reply()
		*r = append(*r, add...)
		for _, e := range add {
			if _, marked := api.IsMarkedForRemoval(f.key(e)); !marked {
				f.lists.viewAdd(e)
			}
		}
	})
	return nil
}

// dropKeys holds the keys a listFamily merge drops from the view: those
// removed and those of the entries set (which replace the view's). It is
// a value, so testing it needs no closure; the keys of a few set entries
// are found by a scan, of many by a map.
type dropKeys[E proto.Message] struct {
	removed map[string]bool
	set     []E
	setKeys map[string]bool // keys of set, if it is long
	key     func(E) string
}

// dropKeysScan is how many set entries dropKeys scans rather than map.
const dropKeysScan = 8

func newDropKeys[E proto.Message](removed map[string]bool, set []E, key func(E) string) dropKeys[E] {
	d := dropKeys[E]{removed: removed, set: set, key: key}
	if len(set) > dropKeysScan {
		d.setKeys = make(map[string]bool, len(set))
		for _, e := range set {
			d.setKeys[key(e)] = true
		}
	}
	return d
}

// has reports whether the view's entry with key k is dropped.
func (d dropKeys[E]) has(k string) bool { return d.removed[k] || d.replaced(k) }

// replaced reports whether an entry set has key k.
func (d dropKeys[E]) replaced(k string) bool {
	if d.setKeys != nil {
		return d.setKeys[k]
	}
	for _, e := range d.set {
		if d.key(e) == k {
			return true
		}
	}
	return false
}

// special reports whether e is nil or a removal.
func (f listFamily[E]) special(e E) bool {
	if isNil(e) {
		return true
	}
	_, marked := api.IsMarkedForRemoval(f.key(e))
	return marked
}

func isNil[E proto.Message](e E) bool {
	return !e.ProtoReflect().IsValid()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
