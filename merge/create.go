package merge

import (
	"errors"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// Create merges the CreateContainer answers of the plugins for one
// container: the adjustments to the container, updates to other
// containers and evictions.
type Create struct {
	pod       *api.PodSandbox
	ctr       *api.Container           // what the next plugin sees (copy on write, see own)
	owned     viewPart                 // parts of ctr copied from the caller's container
	adj       *api.ContainerAdjustment // merged adjustment
	owners    *api.OwningPlugins
	updates   updateSet
	evictions evictions
	tx        txn // reused for every answer
}

// NewCreate returns a merger for the creation of ctr in pod. ctr itself is
// not modified: the container view (see Container) starts as a shallow
// copy of ctr that shares everything beneath its fields with ctr, and a
// part of it (the environment, the mounts, the Linux settings, ...) is
// copied the first time a plugin's adjustment changes it. So the caller
// must not modify ctr while the Create is in use.
func NewCreate(pod *api.PodSandbox, ctr *api.Container) *Create {
	view := shallowCopy(ctr)
	return &Create{
		pod:     pod,
		ctr:     view,
		adj:     &api.ContainerAdjustment{},
		owners:  api.NewOwningPlugins(),
		updates: newUpdateSet(view.Id, "", nil),
	}
}

// Apply merges the answer of plugin (its full name, "IDX-NAME"). It returns
// a *ConflictError if the answer sets a field another plugin set, and an
// error wrapping ErrUpdateDuringCreation if it asks to update the container
// being created. On error nothing of the answer is merged. Apply takes
// ownership of rsp: the caller must not modify it afterwards.
func (c *Create) Apply(plugin string, rsp *api.CreateContainerResponse) error {
	if rsp == nil {
		return nil
	}
	tx := c.tx.begin(c.owners)
	defer tx.end()
	if err := c.adjust(tx, plugin, rsp.Adjust); err != nil {
		return c.named(err)
	}
	if err := c.updates.apply(tx, plugin, rsp.Update); err != nil {
		return c.named(err)
	}
	c.evictions.apply(tx, rsp.Evict)
	tx.commit()
	return nil
}

// named fills in a conflict's container name when the conflict is about
// the container being created, whose pod and name are known.
func (c *Create) named(err error) error {
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Container == "" && ce.ContainerID == c.ctr.GetId() {
		ce.Container = c.pod.GetNamespace() + "/" + c.pod.GetName() + "/" + c.ctr.GetName()
	}
	return err
}

// Adjustment returns the merged adjustment, as sent to the runtime: keyed
// entries removed by a plugin appear with removal markers the way
// containerd/nri reports them (see the package documentation).
func (c *Create) Adjustment() *api.ContainerAdjustment { return c.adj }

// Updates returns the merged updates to other containers, one per
// container, in the order the containers were first named.
func (c *Create) Updates() []*api.ContainerUpdate { return c.updates.list() }

// Evictions returns the containers plugins asked to evict, each once.
func (c *Create) Evictions() []*api.ContainerEviction { return c.evictions.list }

// Owners returns which plugin set which field, per container (the created
// one and those updated), as sent to validators.
func (c *Create) Owners() *api.OwningPlugins { return c.owners }

// Ignored returns the conflicts of updates marked IgnoreFailure that were
// dropped instead of failing their plugin's answer.
func (c *Create) Ignored() []error { return c.updates.ignored }

// Container returns the container as the next plugin should see it: the
// original with the adjustments merged so far applied (as containerd/nri
// does: annotations, mounts, environment, args, hooks, devices,
// resources, cgroups path, OOM score, I/O priority, seccomp policy,
// namespaces, sysctls, network devices, scheduler and rlimits; CDI
// devices, RDT and memory policy are not reflected).
//
// The view shares the parts no plugin changed with the container given
// to NewCreate, and Apply may replace a part of it (a field of the
// returned Container) with a changed copy: read the view through the
// returned Container after each Apply rather than keeping pointers into
// it, and do not modify it.
func (c *Create) Container() *api.Container { return c.ctr }

// Pod returns the pod the container is created in.
func (c *Create) Pod() *api.PodSandbox { return c.pod }

func (c *Create) adjust(tx *txn, plugin string, a *api.ContainerAdjustment) error {
	if a == nil {
		return nil
	}
	id := c.ctr.Id
	if err := c.annotations().merge(tx, id, plugin, a.Annotations); err != nil {
		return err
	}
	if err := c.mounts().merge(tx, id, plugin, a.Mounts); err != nil {
		return err
	}
	if err := c.env().merge(tx, id, plugin, a.Env); err != nil {
		return err
	}
	if err := c.mergeArgs(tx, plugin, a.Args); err != nil {
		return err
	}
	c.mergeHooks(tx, plugin, a.Hooks)
	if err := c.adjustLinux(tx, plugin, a.Linux); err != nil {
		return err
	}
	if err := c.mergeRlimits(tx, plugin, a.Rlimits); err != nil {
		return err
	}
	return c.mergeCDIDevices(tx, plugin, a.CDIDevices)
}

func (c *Create) annotations() mapFamily[string] {
	return mapFamily[string]{
		field: api.Field_Annotations,
		maps:  annotationMaps{c},
		clone: func(v string) string { return v },
	}
}

// annotationMaps is the annotations family's access to c (a mapAccess).
type annotationMaps struct{ c *Create }

func (m annotationMaps) reply() map[string]string { return ensureMap(&m.c.adj.Annotations) }
func (m annotationMaps) view() map[string]string {
	return ensureMap(&m.c.own(partAnnotations).Annotations)
}

func (c *Create) mounts() listFamily[*api.Mount] {
	return listFamily[*api.Mount]{
		field:           api.Field_Mounts,
		key:             (*api.Mount).GetDestination,
		forwardRemovals: true,
		lists:           mountLists{c},
	}
}

// mountLists is the mounts family's access to c (a listAccess).
type mountLists struct{ c *Create }

func (l mountLists) current() []*api.Mount { return l.c.adj.Mounts }
func (l mountLists) reply() *[]*api.Mount  { return &l.c.adj.Mounts }
func (l mountLists) viewDrop(drop dropKeys[*api.Mount]) {
	match := func(m *api.Mount) bool { return drop.has(m.GetDestination()) }
	if slices.ContainsFunc(l.c.ctr.Mounts, match) {
		v := l.c.own(partMounts)
		v.Mounts = slices.DeleteFunc(v.Mounts, match)
	}
}
func (l mountLists) viewAdd(m *api.Mount) {
	v := l.c.own(partMounts)
	v.Mounts = append(v.Mounts, api.Clone(m))
}

func (c *Create) env() listFamily[*api.KeyValue] {
	return listFamily[*api.KeyValue]{
		field: api.Field_Env,
		key:   (*api.KeyValue).GetKey,
		lists: envLists{c},
	}
}

// envLists is the environment family's access to c (a listAccess).
type envLists struct{ c *Create }

func (l envLists) current() []*api.KeyValue { return l.c.adj.Env }
func (l envLists) reply() *[]*api.KeyValue  { return &l.c.adj.Env }
func (l envLists) viewDrop(drop dropKeys[*api.KeyValue]) {
	match := func(e string) bool {
		name, _, _ := strings.Cut(e, "=")
		return drop.has(name)
	}
	if slices.ContainsFunc(l.c.ctr.Env, match) {
		v := l.c.own(partEnv)
		v.Env = slices.DeleteFunc(v.Env, match)
	}
}
func (l envLists) viewAdd(e *api.KeyValue) {
	v := l.c.own(partEnv)
	v.Env = append(v.Env, e.Key+"="+e.Value)
}

// mergeArgs merges a command line. A leading empty string (UpdateArgs)
// takes the command line over from a plugin that set it earlier.
func (c *Create) mergeArgs(tx *txn, plugin string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	k := simpleKey(c.ctr.Id, api.Field_Args)
	if args[0] == "" {
		tx.clear(k, plugin)
		args = args[1:]
	}
	if err := tx.claim(k, plugin); err != nil {
		return err
	}
	tx.then(func() {
		c.adj.Args = slices.Clone(args)
		c.ctr.Args = slices.Clone(args) // replaces the view's slice, never changes it
	})
	return nil
}

// mergeHooks appends OCI hooks; hooks never conflict, their owners
// accumulate.
func (c *Create) mergeHooks(tx *txn, plugin string, h *api.Hooks) {
	if h == nil {
		return
	}
	lists := func(h *api.Hooks) []*[]*api.Hook {
		return []*[]*api.Hook{&h.Prestart, &h.CreateRuntime, &h.CreateContainer, &h.StartContainer, &h.Poststart, &h.Poststop}
	}
	src, nonEmpty := lists(h), false
	for _, l := range src {
		nonEmpty = nonEmpty || len(*l) > 0
	}
	if !nonEmpty {
		return
	}
	tx.accumulate(simpleKey(c.ctr.Id, api.Field_OciHooks), plugin)
	tx.then(func() {
		reply, view := lists(adjHooks(c.adj)), lists(c.viewHooks())
		for i, l := range src {
			for _, hook := range *l {
				if hook != nil {
					*reply[i] = append(*reply[i], hook)
					*view[i] = append(*view[i], api.Clone(hook))
				}
			}
		}
	})
}

func (c *Create) mergeRlimits(tx *txn, plugin string, rlimits []*api.POSIXRlimit) error {
	for _, l := range rlimits {
		if l == nil {
			continue
		}
		if err := tx.claim(entryKey(c.ctr.Id, api.Field_Rlimits, l.Type), plugin); err != nil {
			return err
		}
		tx.then(func() {
			c.adj.Rlimits = append(c.adj.Rlimits, l)
			v := c.own(partRlimits)
			v.Rlimits = append(v.Rlimits, api.Clone(l))
		})
	}
	return nil
}

// mergeCDIDevices merges CDI device injections, owned per device name.
// They are resolved by the runtime and so not reflected in the view.
func (c *Create) mergeCDIDevices(tx *txn, plugin string, devices []*api.CDIDevice) error {
	for _, d := range devices {
		if d == nil {
			continue
		}
		if err := tx.claim(entryKey(c.ctr.Id, api.Field_CdiDevices, d.Name), plugin); err != nil {
			return err
		}
		tx.then(func() { c.adj.CDIDevices = append(c.adj.CDIDevices, d) })
	}
	return nil
}
