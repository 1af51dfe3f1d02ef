package merge

import (
	"slices"

	"github.com/nrikit/nrikit/api"
)

// linuxField is a simple (single-owner) Linux adjustment field.
type linuxField struct {
	field api.Field
	isSet func(l *api.LinuxContainerAdjustment) bool
	apply func(c *Create, l *api.LinuxContainerAdjustment)
}

// Simple Linux fields in upstream's order, before and after the keyed
// namespace, sysctl and network device fields. Read-only tables.
var (
	linuxFieldsEarly = []linuxField{
		{api.Field_CgroupsPath,
			func(l *api.LinuxContainerAdjustment) bool { return l.CgroupsPath != "" },
			func(c *Create, l *api.LinuxContainerAdjustment) {
				adjLinux(c.adj).CgroupsPath = l.CgroupsPath
				ctrLinux(c.ctr).CgroupsPath = l.CgroupsPath
			}},
		{api.Field_OomScoreAdj,
			func(l *api.LinuxContainerAdjustment) bool { return l.OomScoreAdj != nil },
			func(c *Create, l *api.LinuxContainerAdjustment) {
				adjLinux(c.adj).OomScoreAdj = l.OomScoreAdj
				ctrLinux(c.ctr).OomScoreAdj = api.Clone(l.OomScoreAdj)
			}},
		{api.Field_IoPriority,
			func(l *api.LinuxContainerAdjustment) bool { return l.IoPriority != nil },
			func(c *Create, l *api.LinuxContainerAdjustment) {
				adjLinux(c.adj).IoPriority = l.IoPriority
				ctrLinux(c.ctr).IoPriority = api.Clone(l.IoPriority)
			}},
		{api.Field_SeccompPolicy,
			func(l *api.LinuxContainerAdjustment) bool { return l.SeccompPolicy != nil },
			func(c *Create, l *api.LinuxContainerAdjustment) {
				adjLinux(c.adj).SeccompPolicy = l.SeccompPolicy
				ctrLinux(c.ctr).SeccompPolicy = api.Clone(l.SeccompPolicy)
			}},
	}
	linuxFieldsLate = []linuxField{
		{api.Field_LinuxSched,
			func(l *api.LinuxContainerAdjustment) bool { return l.Scheduler != nil },
			func(c *Create, l *api.LinuxContainerAdjustment) {
				adjLinux(c.adj).Scheduler = l.Scheduler
				ctrLinux(c.ctr).Scheduler = api.Clone(l.Scheduler)
			}},
	}
	// The memory policy is applied by the runtime only; it is not
	// reflected in the container view.
	linuxFieldsLast = []linuxField{
		{api.Field_MemoryPolicy,
			func(l *api.LinuxContainerAdjustment) bool { return l.MemoryPolicy != nil },
			func(c *Create, l *api.LinuxContainerAdjustment) { adjLinux(c.adj).MemoryPolicy = l.MemoryPolicy }},
	}
)

func (c *Create) mergeLinuxFields(tx *txn, plugin string, l *api.LinuxContainerAdjustment, fields []linuxField) error {
	for _, f := range fields {
		if !f.isSet(l) {
			continue
		}
		if err := tx.claim(simpleKey(c.ctr.Id, f.field), plugin); err != nil {
			return err
		}
		tx.then(func() { f.apply(c, l) })
	}
	return nil
}

func (c *Create) adjustLinux(tx *txn, plugin string, l *api.LinuxContainerAdjustment) error {
	if l == nil {
		return nil
	}
	id := c.ctr.Id
	if err := c.devices().merge(tx, id, plugin, l.Devices); err != nil {
		return err
	}
	if err := mergeResources(tx, id, plugin, l.Resources, true,
		func() *api.LinuxResources { return ctrResources(c.ctr) },
		func() *api.LinuxResources { return adjResources(c.adj) }); err != nil {
		return err
	}
	if err := c.mergeLinuxFields(tx, plugin, l, linuxFieldsEarly); err != nil {
		return err
	}
	if err := c.mergeNamespaces(tx, plugin, l.Namespaces); err != nil {
		return err
	}
	if err := c.sysctl().merge(tx, id, plugin, l.Sysctl); err != nil {
		return err
	}
	if err := c.netDevices().merge(tx, id, plugin, l.NetDevices); err != nil {
		return err
	}
	if err := c.mergeLinuxFields(tx, plugin, l, linuxFieldsLate); err != nil {
		return err
	}
	if err := c.mergeRdt(tx, plugin, l.Rdt); err != nil {
		return err
	}
	return c.mergeLinuxFields(tx, plugin, l, linuxFieldsLast)
}

func (c *Create) devices() listFamily[*api.LinuxDevice] {
	return listFamily[*api.LinuxDevice]{
		field:   api.Field_Devices,
		key:     (*api.LinuxDevice).GetPath,
		current: func() []*api.LinuxDevice { return c.adj.GetLinux().GetDevices() },
		reply:   func() *[]*api.LinuxDevice { return &adjLinux(c.adj).Devices },
		viewDrop: func(drop func(string) bool) {
			if l := c.ctr.Linux; l != nil {
				l.Devices = slices.DeleteFunc(l.Devices, func(d *api.LinuxDevice) bool { return drop(d.GetPath()) })
			}
		},
		viewAdd: func(d *api.LinuxDevice) { l := ctrLinux(c.ctr); l.Devices = append(l.Devices, d) },
	}
}

func (c *Create) sysctl() mapFamily[string] {
	return mapFamily[string]{
		field: api.Field_Sysctl,
		reply: func() map[string]string { return ensureMap(&adjLinux(c.adj).Sysctl) },
		view:  func() map[string]string { return ensureMap(&ctrLinux(c.ctr).Sysctl) },
		clone: func(v string) string { return v },
	}
}

func (c *Create) netDevices() mapFamily[*api.LinuxNetDevice] {
	return mapFamily[*api.LinuxNetDevice]{
		field: api.Field_LinuxNetDevices,
		reply: func() map[string]*api.LinuxNetDevice { return ensureMap(&adjLinux(c.adj).NetDevices) },
		view:  func() map[string]*api.LinuxNetDevice { return ensureMap(&ctrLinux(c.ctr).NetDevices) },
		clone: api.Clone[*api.LinuxNetDevice],
	}
}

// mergeNamespaces merges namespace changes, owned per namespace type
// (whether joined, replaced or removed). All changes, removals included,
// are passed on in order.
func (c *Create) mergeNamespaces(tx *txn, plugin string, namespaces []*api.LinuxNamespace) error {
	for _, n := range namespaces {
		if n == nil {
			continue
		}
		typ, removed := n.IsMarkedForRemoval()
		if err := tx.claim(entryKey(c.ctr.Id, api.Field_Namespace, typ), plugin); err != nil {
			return err
		}
		tx.then(func() {
			l := adjLinux(c.adj)
			l.Namespaces = append(l.Namespaces, n)
			v := ctrLinux(c.ctr)
			i := slices.IndexFunc(v.Namespaces, func(o *api.LinuxNamespace) bool { return o.GetType() == typ })
			switch {
			case removed && i >= 0:
				v.Namespaces = slices.Delete(v.Namespaces, i, i+1)
			case removed:
			case i >= 0:
				v.Namespaces[i] = api.Clone(n)
			default:
				v.Namespaces = append(v.Namespaces, api.Clone(n))
			}
		})
	}
	return nil
}

// mergeRdt merges RDT settings. Remove takes the three RDT fields over
// from earlier plugins and replaces their settings with a removal request;
// fields the plugin sets as well override the removal.
func (c *Create) mergeRdt(tx *txn, plugin string, rdt *api.LinuxRdt) error {
	if rdt == nil {
		return nil
	}
	id := c.ctr.Id
	if rdt.Remove {
		for _, f := range []api.Field{api.Field_RdtClosID, api.Field_RdtSchemata, api.Field_RdtEnableMonitoring} {
			tx.clear(simpleKey(id, f), plugin)
		}
		tx.then(func() { adjLinux(c.adj).Rdt = &api.LinuxRdt{Remove: true} })
	}
	if rdt.ClosId != nil {
		if err := tx.claim(simpleKey(id, api.Field_RdtClosID), plugin); err != nil {
			return err
		}
		tx.then(func() { r := adjRdt(c.adj); r.ClosId = api.String(rdt.ClosId); r.Remove = false })
	}
	if rdt.Schemata != nil {
		if err := tx.claim(simpleKey(id, api.Field_RdtSchemata), plugin); err != nil {
			return err
		}
		tx.then(func() { r := adjRdt(c.adj); r.Schemata = api.RepeatedString(rdt.Schemata); r.Remove = false })
	}
	if rdt.EnableMonitoring != nil {
		if err := tx.claim(simpleKey(id, api.Field_RdtEnableMonitoring), plugin); err != nil {
			return err
		}
		tx.then(func() { r := adjRdt(c.adj); r.EnableMonitoring = api.Bool(rdt.EnableMonitoring); r.Remove = false })
	}
	return nil
}
