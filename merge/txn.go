package merge

import (
	"github.com/nrikit/nrikit/api"
)

// ownerKey addresses one ownership record: a simple field of a container,
// or one entry of a compound (keyed) field.
type ownerKey struct {
	id       string
	field    api.Field
	key      string
	compound bool
}

func simpleKey(id string, f api.Field) ownerKey { return ownerKey{id: id, field: f} }

func entryKey(id string, f api.Field, key string) ownerKey {
	return ownerKey{id: id, field: f, key: key, compound: true}
}

// txn stages the effects of one plugin answer: ownership changes are kept
// in an overlay that later checks in the same answer see, and changes to
// the merged result are queued as actions. commit applies both; dropping
// the txn discards them, so a rejected answer leaves the merger unchanged.
// A child txn stages one optional part of an answer (an update that may
// be ignored on failure) and commits into its parent.
//
// A merger keeps its root txn and reuses it for every answer (see begin),
// so its overlay map and action list are allocated once per merger, not
// once per answer.
type txn struct {
	parent  *txn
	base    *api.OwningPlugins // root only
	owners  map[ownerKey]string
	actions []func()
	small   [4]func() // first backing array of actions
}

// begin readies the root txn t of a merger whose ownership records are
// base for the next answer, and returns it. The caller must call end when
// done with the answer (committed or not).
func (t *txn) begin(base *api.OwningPlugins) *txn {
	t.base = base
	if t.actions == nil {
		t.actions = t.small[:0]
	}
	return t
}

// end discards what t still stages, keeping the memory for the next
// answer (and dropping the references to this one's messages).
func (t *txn) end() {
	clear(t.owners)
	clear(t.actions)
	t.actions = t.actions[:0]
}

func (t *txn) child() *txn {
	return &txn{parent: t}
}

// owner returns the recorded owner of k as the txn sees it.
func (t *txn) owner(k ownerKey) (string, bool) {
	for x := t; x != nil; x = x.parent {
		if v, ok := x.owners[k]; ok {
			return v, true
		}
		if x.parent == nil {
			if k.compound {
				return x.base.CompoundOwner(k.id, k.field, k.key)
			}
			return x.base.SimpleOwner(k.id, k.field)
		}
	}
	return "", false
}

func (t *txn) set(k ownerKey, owner string) {
	if t.owners == nil {
		t.owners = make(map[ownerKey]string)
	}
	t.owners[k] = owner
}

// claim records plugin as the owner of k, or fails with a *ConflictError
// if another plugin owns it. An owner that removed the field (recorded
// with a removal marker) still blocks other plugins but not itself.
func (t *txn) claim(k ownerKey, plugin string) error {
	if other, ok := t.owner(k); ok {
		other = api.ClearRemovalMarker(other)
		if other != plugin {
			return &ConflictError{ContainerID: k.id, Field: k.field, Key: k.key, Plugins: [2]string{other, plugin}}
		}
	}
	t.set(k, plugin)
	return nil
}

// clear records that plugin removed k, which it may then set again.
func (t *txn) clear(k ownerKey, plugin string) {
	t.set(k, api.MarkForRemoval(plugin))
}

// accumulate adds plugin to the owners of k, for fields several plugins
// may set (OCI hooks).
func (t *txn) accumulate(k ownerKey, plugin string) {
	if old, ok := t.owner(k); ok {
		plugin = old + "," + plugin
	}
	t.set(k, plugin)
}

// then queues an action that changes the merged result at commit.
func (t *txn) then(action func()) {
	t.actions = append(t.actions, action)
}

// commit applies the staged ownership changes and actions, into the parent
// for a child txn.
func (t *txn) commit() {
	if p := t.parent; p != nil {
		for k, v := range t.owners {
			p.set(k, v)
		}
		p.actions = append(p.actions, t.actions...)
		return
	}
	for k, v := range t.owners {
		recordOwner(t.base, k, v)
	}
	for _, action := range t.actions {
		action()
	}
}

func recordOwner(o *api.OwningPlugins, k ownerKey, owner string) {
	if o.Owners == nil {
		o.Owners = make(map[string]*api.FieldOwners)
	}
	f := o.Owners[k.id]
	if f == nil {
		f = &api.FieldOwners{} // maps made as needed, below
		o.Owners[k.id] = f
	}
	if !k.compound {
		if f.Simple == nil {
			f.Simple = make(map[int32]string)
		}
		f.Simple[k.field.Key()] = owner
		return
	}
	if f.Compound == nil {
		f.Compound = make(map[int32]*api.CompoundFieldOwners)
	}
	c := f.Compound[k.field.Key()]
	if c == nil {
		c = &api.CompoundFieldOwners{}
		f.Compound[k.field.Key()] = c
	}
	if c.Owners == nil {
		c.Owners = make(map[string]string)
	}
	c.Owners[k.key] = owner
}
