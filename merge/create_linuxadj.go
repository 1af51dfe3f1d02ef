// The Linux part of a container adjustment is data like the rest: it is
// merged the same way whatever system the runtime itself runs on.

package merge

import (
	"math"
	"slices"

	"github.com/nrikit/nrikit/api"
)

// linuxField is a simple (single-owner) Linux adjustment field, a row of
// linuxFields (generated from the proto: fields_generated.go).
type linuxField struct {
	field api.Field
	isSet func(l *api.LinuxContainerAdjustment) bool
	apply func(c *Create, l *api.LinuxContainerAdjustment)
}

// mergeLinuxFields merges the simple Linux fields between the Field values
// after and before (exclusive), so that all fields merge in Field order
// (upstream's) with the keyed ones between them.
func (c *Create) mergeLinuxFields(tx *txn, plugin string, l *api.LinuxContainerAdjustment, after, before api.Field) error {
	for _, f := range linuxFields {
		if f.field <= after || f.field >= before || !f.isSet(l) {
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
		c.viewResources,
		func() *api.LinuxResources { return adjResources(c.adj) }); err != nil {
		return err
	}
	if err := c.mergeLinuxFields(tx, plugin, l, api.Field_None, api.Field_Namespace); err != nil {
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
	if err := c.mergeLinuxFields(tx, plugin, l, api.Field_LinuxNetDevices, api.Field_RdtClosID); err != nil {
		return err
	}
	if err := c.mergeRdt(tx, plugin, l.Rdt); err != nil {
		return err
	}
	return c.mergeLinuxFields(tx, plugin, l, api.Field_RdtEnableMonitoring, math.MaxInt32)
}

func (c *Create) devices() listFamily[*api.LinuxDevice] {
	return listFamily[*api.LinuxDevice]{
		field: api.Field_Devices,
		key:   (*api.LinuxDevice).GetPath,
		lists: deviceLists{c},
	}
}

// deviceLists is the devices family's access to c (a listAccess).
type deviceLists struct{ c *Create }

func (l deviceLists) current() []*api.LinuxDevice { return l.c.adj.GetLinux().GetDevices() }
func (l deviceLists) reply() *[]*api.LinuxDevice  { return &adjLinux(l.c.adj).Devices }
func (l deviceLists) viewDrop(drop dropKeys[*api.LinuxDevice]) {
	match := func(d *api.LinuxDevice) bool { return drop.has(d.GetPath()) }
	if slices.ContainsFunc(l.c.ctr.GetLinux().GetDevices(), match) {
		v := l.c.viewLinux()
		v.Devices = slices.DeleteFunc(v.Devices, match)
	}
}
func (l deviceLists) viewAdd(d *api.LinuxDevice) {
	v := l.c.viewLinux()
	v.Devices = append(v.Devices, api.Clone(d))
}

func (c *Create) sysctl() mapFamily[string] {
	return mapFamily[string]{
		field: api.Field_Sysctl,
		maps:  sysctlMaps{c},
		clone: func(v string) string { return v },
	}
}

// sysctlMaps is the sysctls family's access to c (a mapAccess).
type sysctlMaps struct{ c *Create }

func (m sysctlMaps) reply() map[string]string { return ensureMap(&adjLinux(m.c.adj).Sysctl) }
func (m sysctlMaps) view() map[string]string  { return ensureMap(&m.c.viewLinux().Sysctl) }

func (c *Create) netDevices() mapFamily[*api.LinuxNetDevice] {
	return mapFamily[*api.LinuxNetDevice]{
		field: api.Field_LinuxNetDevices,
		maps:  netDeviceMaps{c},
		clone: api.Clone[*api.LinuxNetDevice],
	}
}

// netDeviceMaps is the network devices family's access to c (a mapAccess).
type netDeviceMaps struct{ c *Create }

func (m netDeviceMaps) reply() map[string]*api.LinuxNetDevice {
	return ensureMap(&adjLinux(m.c.adj).NetDevices)
}
func (m netDeviceMaps) view() map[string]*api.LinuxNetDevice {
	return ensureMap(&m.c.viewLinux().NetDevices)
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
			v := c.viewLinux()
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
