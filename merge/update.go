package merge

import (
	"github.com/nrikit/nrikit/api"
)

// Update merges the UpdateContainer answers of the plugins: changes to the
// resources of the container being updated, updates to other containers
// and evictions.
type Update struct {
	pod       *api.PodSandbox
	ctr       *api.Container
	owners    *api.OwningPlugins
	updates   updateSet
	evictions evictions
	tx        txn // reused for every answer
}

// NewUpdate returns a merger for the update of ctr (in pod) to the
// resources res. It works on a copy of res; res itself is not modified.
func NewUpdate(pod *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) *Update {
	merged := api.Clone(res)
	if merged == nil {
		merged = &api.LinuxResources{}
	}
	return &Update{
		pod:     pod,
		ctr:     ctr,
		owners:  api.NewOwningPlugins(),
		updates: newUpdateSet("", ctr.GetId(), merged),
	}
}

// Apply merges the answer of plugin ("IDX-NAME"): its updates to the
// container being updated are merged into Resources, the others into
// Updates. It returns a *ConflictError if the answer sets a resource
// another plugin set (unless the update carrying it is marked
// IgnoreFailure: it is then dropped). On error nothing of the answer is
// merged. Apply takes ownership of rsp.
func (u *Update) Apply(plugin string, rsp *api.UpdateContainerResponse) error {
	if rsp == nil {
		return nil
	}
	tx := u.tx.begin(u.owners)
	defer tx.end()
	if err := u.updates.apply(tx, plugin, rsp.Update); err != nil {
		return err
	}
	u.evictions.apply(tx, rsp.Evict)
	tx.commit()
	return nil
}

// Resources returns the merged resources of the container being updated:
// the requested resources with the plugins' changes so far. This is also
// what the next plugin should be sent as the requested resources.
func (u *Update) Resources() *api.LinuxResources { return u.updates.selfRes }

// Updates returns the merged updates to other containers, one per
// container.
func (u *Update) Updates() []*api.ContainerUpdate { return u.updates.list() }

// Evictions returns the containers plugins asked to evict, each once.
func (u *Update) Evictions() []*api.ContainerEviction { return u.evictions.list }

// Owners returns which plugin set which resource, per container.
func (u *Update) Owners() *api.OwningPlugins { return u.owners }

// Ignored returns the conflicts of updates marked IgnoreFailure that were
// dropped.
func (u *Update) Ignored() []error { return u.updates.ignored }

// Container returns the container being updated.
func (u *Update) Container() *api.Container { return u.ctr }

// Pod returns the pod of the container being updated.
func (u *Update) Pod() *api.PodSandbox { return u.pod }
