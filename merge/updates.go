package merge

import (
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// updateSet merges container updates, one merged update per container.
type updateSet struct {
	creating string              // container being created: updates to it are refused
	self     string              // container whose resources are merged into selfRes instead
	selfRes  *api.LinuxResources // merged resources of self
	order    []*api.ContainerUpdate
	byID     map[string]*api.ContainerUpdate // made by the first record
	ignored  []error
}

func newUpdateSet(creating, self string, selfRes *api.LinuxResources) updateSet {
	return updateSet{creating: creating, self: self, selfRes: selfRes}
}

// apply merges a plugin's updates. Each field of a container's resources
// has one owner across plugins, as with adjustments. An update marked
// IgnoreFailure that conflicts is dropped (recorded in ignored) instead of
// failing the answer. A merged update is optional only if every update
// merged into it is.
func (s *updateSet) apply(tx *txn, plugin string, updates []*api.ContainerUpdate) error {
	for _, u := range updates {
		if u == nil {
			continue
		}
		id := u.ContainerId
		if s.creating != "" && id == s.creating {
			return fmt.Errorf("plugin %q asked to update container %q: %w", plugin, id, ErrUpdateDuringCreation)
		}
		dst := func() *api.LinuxResources { return s.selfRes }
		if id != s.self || s.self == "" {
			optional := u.IgnoreFailure
			tx.then(func() { s.record(id, optional) })
			dst = func() *api.LinuxResources { return updResources(s.byID[id]) }
		}
		sub := tx.child()
		if err := mergeResources(sub, id, plugin, u.GetLinux().GetResources(), false, dst); err != nil {
			if !u.IgnoreFailure {
				return err
			}
			tx.then(func() { s.ignored = append(s.ignored, err) })
			continue
		}
		sub.commit()
	}
	return nil
}

// record makes sure there is a merged update for container id.
func (s *updateSet) record(id string, optional bool) {
	if u, ok := s.byID[id]; ok {
		u.IgnoreFailure = u.IgnoreFailure && optional
		return
	}
	u := &api.ContainerUpdate{ContainerId: id, IgnoreFailure: optional}
	if s.byID == nil {
		s.byID = make(map[string]*api.ContainerUpdate)
	}
	s.byID[id] = u
	s.order = append(s.order, u)
}

func (s *updateSet) list() []*api.ContainerUpdate { return s.order }

// Updates merges plain lists of container updates: the answers of the
// plugins to StopContainer, for instance.
type Updates struct {
	owners  *api.OwningPlugins
	updates updateSet
	tx      txn // reused for every answer
}

// NewUpdates returns an empty update merger.
func NewUpdates() *Updates {
	return &Updates{owners: api.NewOwningPlugins(), updates: newUpdateSet("", "", nil)}
}

// Apply merges the updates of plugin ("IDX-NAME"). It returns a
// *ConflictError if an update sets a field another plugin's update set
// (unless the update is marked IgnoreFailure: it is then dropped). On
// error nothing of upd is merged. Apply takes ownership of upd.
func (u *Updates) Apply(plugin string, upd []*api.ContainerUpdate) error {
	tx := u.tx.begin(u.owners)
	defer tx.end()
	if err := u.updates.apply(tx, plugin, upd); err != nil {
		return err
	}
	tx.commit()
	return nil
}

// List returns the merged updates, one per container, in the order the
// containers were first named.
func (u *Updates) List() []*api.ContainerUpdate { return u.updates.list() }

// Owners returns which plugin set which resource, per container.
func (u *Updates) Owners() *api.OwningPlugins { return u.owners }

// Ignored returns the conflicts of updates marked IgnoreFailure that were
// dropped.
func (u *Updates) Ignored() []error { return u.updates.ignored }
