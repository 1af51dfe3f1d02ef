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
	marker V                   // value sent with a removal marker
	reply  func() map[string]V // merged adjustment's map (allocating)
	view   func() map[string]V // container view's map (allocating)
	clone  func(V) V
}

func (f mapFamily[V]) merge(tx *txn, id, plugin string, in map[string]V) error {
	if len(in) == 0 {
		return nil
	}
	removed := make(map[string]bool)
	set := make([]string, 0, len(in))
	for k := range in {
		if key, marked := api.IsMarkedForRemoval(k); marked {
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
				delete(f.view(), k)
				f.reply()[api.MarkForRemoval(k)] = f.marker
			})
		}
		if err := tx.claim(entryKey(id, f.field, k), plugin); err != nil {
			return err
		}
		v := in[k]
		tx.then(func() {
			f.view()[k] = f.clone(v)
			f.reply()[k] = v
		})
	}
	for _, k := range sortedKeys(removed) {
		tx.then(func() { f.reply()[api.MarkForRemoval(k)] = f.marker })
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
	current         func() []E  // merged adjustment's list (not allocating)
	reply           func() *[]E // merged adjustment's list (allocating)
	viewDrop        func(drop func(key string) bool)
	viewAdd         func(E)
}

func (f listFamily[E]) merge(tx *txn, id, plugin string, in []E) error {
	if len(in) == 0 {
		return nil
	}
	var (
		set      []E
		removals []E
		removed  = make(map[string]bool)
		modified = make(map[string]bool)
	)
	for _, e := range in {
		if isNil(e) {
			continue
		}
		if key, marked := api.IsMarkedForRemoval(f.key(e)); marked {
			removed[key] = true
			removals = append(removals, e)
		} else {
			set = append(set, e)
			modified[key] = true
		}
	}
	if len(set) == 0 && len(removals) == 0 {
		return nil
	}

	dropped := false
	for _, e := range f.current() {
		if key := f.key(e); removed[key] {
			tx.clear(entryKey(id, f.field, key), plugin)
			dropped = true
		}
	}
	if dropped {
		tx.then(func() {
			r := f.reply()
			*r = slices.DeleteFunc(*r, func(e E) bool { return removed[f.key(e)] })
		})
	}
	tx.then(func() {
		f.viewDrop(func(key string) bool { return removed[key] || modified[key] })
	})
	for _, e := range set {
		if err := tx.claim(entryKey(id, f.field, f.key(e)), plugin); err != nil {
			return err
		}
	}
	if f.forwardRemovals {
		forwarded := make(map[string]bool)
		for _, e := range removals {
			key, _ := api.IsMarkedForRemoval(f.key(e))
			if !modified[key] && !forwarded[key] {
				forwarded[key] = true
				set = append(set, e)
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	tx.then(func() {
		r := f.reply()
		*r = append(*r, set...)
		for _, e := range set {
			if _, marked := api.IsMarkedForRemoval(f.key(e)); !marked {
				f.viewAdd(api.Clone(e))
			}
		}
	})
	return nil
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
