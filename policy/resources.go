package policy

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// resourceCaps are the capabilities of the classes of resources, for
// adjustments and for updates.
type resourceCaps struct {
	memory, cpu, hugepages, blockio, rdt, unified, devices, pids capability.Capability
}

var (
	adjustResourceCaps = resourceCaps{capability.Memory, capability.CPU, capability.HugepageLimits, capability.BlockioClass, capability.RdtClass, capability.Unified, capability.DeviceCgroup, capability.Pids}
	updateResourceCaps = resourceCaps{capability.UpdateMemory, capability.UpdateCPU, capability.UpdateHugepageLimits, capability.UpdateBlockioClass, capability.UpdateRdtClass,
		capability.UpdateUnified, capability.UpdateDeviceCgroup, capability.UpdatePids}
)

// checkResources checks resources of an adjustment or (update) of an
// update.
func (g *Grant) checkResources(vs []Violation, res *api.LinuxResources, update bool) []Violation {
	r, k := &g.adjust.resources, adjustResourceCaps
	if update {
		r, k = &g.update, updateResourceCaps
	}
	if m := res.GetMemory(); memorySet(m) {
		switch {
		case !g.caps.Has(k.memory):
			vs = g.deny(vs, k.memory, memoryValue(m), notGranted)
		case r.maxMemory > 0 && (m.GetLimit().GetValue() > r.maxMemory || m.GetReservation().GetValue() > r.maxMemory):
			vs = g.deny(vs, k.memory, memoryValue(m), fmt.Sprintf("over the cap of %d bytes", r.maxMemory))
		}
	}
	if c := res.GetCpu(); cpuSet(c) {
		switch {
		case !g.caps.Has(k.cpu):
			vs = g.deny(vs, k.cpu, cpuValue(c), notGranted)
		case r.maxShares > 0 && c.GetShares().GetValue() > r.maxShares:
			vs = g.deny(vs, k.cpu, cpuValue(c), fmt.Sprintf("shares over the cap of %d", r.maxShares))
		case !r.realtime && (c.GetRealtimeRuntime() != nil || c.GetRealtimePeriod() != nil):
			vs = g.deny(vs, k.cpu, cpuValue(c), "realtime settings not allowed")
		}
	}
	for _, h := range res.GetHugepageLimits() {
		if reason := g.checkHugepages(r, k.hugepages, h); reason != "" {
			vs = g.deny(vs, k.hugepages, quote(fmt.Sprintf("%s %d", h.GetPageSize(), h.GetLimit())), reason)
		}
	}
	if c := res.GetBlockioClass(); c != nil && (!g.caps.Has(k.blockio) || !r.blockio.match(c.GetValue())) {
		vs = g.deny(vs, k.blockio, quote(c.GetValue()), g.reason(k.blockio, "class not allowed"))
	}
	if c := res.GetRdtClass(); c != nil && (!g.caps.Has(k.rdt) || !r.rdt.match(c.GetValue())) {
		vs = g.deny(vs, k.rdt, quote(c.GetValue()), g.reason(k.rdt, "class not allowed"))
	}
	for key := range res.GetUnified() {
		if !g.caps.Has(k.unified) || !r.unified.match(api.ClearRemovalMarker(key)) {
			vs = g.deny(vs, k.unified, quote(key), g.reason(k.unified, "key not allowed"))
		}
	}
	for _, d := range res.GetDevices() {
		switch {
		case !g.caps.Has(k.devices):
			vs = g.deny(vs, k.devices, deviceRuleValue(d), notGranted)
		case d.GetAllow() && !r.grantAccess:
			vs = g.deny(vs, k.devices, deviceRuleValue(d), "rules that allow access to devices not allowed")
		}
	}
	if p := res.GetPids(); p != nil {
		switch {
		case !g.caps.Has(k.pids):
			vs = g.deny(vs, k.pids, fmt.Sprint(p.GetLimit()), notGranted)
		case r.maxPids > 0 && (p.GetLimit() <= 0 || p.GetLimit() > r.maxPids):
			vs = g.deny(vs, k.pids, fmt.Sprint(p.GetLimit()), fmt.Sprintf("outside 1..%d", r.maxPids))
		}
	}
	return vs
}

// checkHugepages returns why a hugepage limit is refused, or "".
func (g *Grant) checkHugepages(r *resourceRules, cp capability.Capability, h *api.HugepageLimit) string {
	if !g.caps.Has(cp) {
		return notGranted
	}
	if r.pageSizes != nil {
		ok := false
		for _, s := range r.pageSizes {
			ok = ok || s == h.GetPageSize()
		}
		if !ok {
			return "page size not allowed"
		}
	}
	if r.maxHugepages > 0 && h.GetLimit() > r.maxHugepages {
		return fmt.Sprintf("over the cap of %d bytes", r.maxHugepages)
	}
	return ""
}

// memorySet reports whether m sets anything.
func memorySet(m *api.LinuxMemory) bool {
	return m != nil && (m.GetLimit() != nil || m.GetReservation() != nil || m.GetSwap() != nil || m.GetKernel() != nil ||
		m.GetKernelTcp() != nil || m.GetSwappiness() != nil || m.GetDisableOomKiller() != nil || m.GetUseHierarchy() != nil)
}

// cpuSet reports whether c sets anything.
func cpuSet(c *api.LinuxCPU) bool {
	return c != nil && (c.GetShares() != nil || c.GetQuota() != nil || c.GetPeriod() != nil || c.GetRealtimeRuntime() != nil ||
		c.GetRealtimePeriod() != nil || c.GetCpus() != "" || c.GetMems() != "")
}

// memoryValue renders the memory settings m sets, and only those (a
// reservation the plugin did not set is not "reservation 0").
func memoryValue(m *api.LinuxMemory) string {
	var b setFields
	b.add("limit", m.GetLimit() != nil, m.GetLimit().GetValue())
	b.add("reservation", m.GetReservation() != nil, m.GetReservation().GetValue())
	b.add("swap", m.GetSwap() != nil, m.GetSwap().GetValue())
	b.add("kernel", m.GetKernel() != nil, m.GetKernel().GetValue())
	b.add("kernel_tcp", m.GetKernelTcp() != nil, m.GetKernelTcp().GetValue())
	b.add("swappiness", m.GetSwappiness() != nil, m.GetSwappiness().GetValue())
	b.add("disable_oom_killer", m.GetDisableOomKiller() != nil, m.GetDisableOomKiller().GetValue())
	b.add("use_hierarchy", m.GetUseHierarchy() != nil, m.GetUseHierarchy().GetValue())
	return quote(b.String())
}

// cpuValue renders the CPU settings c sets, and only those.
func cpuValue(c *api.LinuxCPU) string {
	var b setFields
	b.add("shares", c.GetShares() != nil, c.GetShares().GetValue())
	b.add("quota", c.GetQuota() != nil, c.GetQuota().GetValue())
	b.add("period", c.GetPeriod() != nil, c.GetPeriod().GetValue())
	b.add("realtime_runtime", c.GetRealtimeRuntime() != nil, c.GetRealtimeRuntime().GetValue())
	b.add("realtime_period", c.GetRealtimePeriod() != nil, c.GetRealtimePeriod().GetValue())
	b.add("cpus", c.GetCpus() != "", c.GetCpus())
	b.add("mems", c.GetMems() != "", c.GetMems())
	return quote(b.String())
}

// setFields renders the fields of a message that are set, "NAME VALUE"
// each, separated by blanks.
type setFields struct{ strings.Builder }

// add renders the field name with its value if it is set.
func (b *setFields) add(name string, set bool, value any) {
	if !set {
		return
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	fmt.Fprintf(b, "%s %v", name, value)
}

func deviceRuleValue(d *api.LinuxDeviceCgroup) string {
	return quote(fmt.Sprintf("allow %v type %s major %d minor %d access %s", d.GetAllow(), d.GetType(),
		d.GetMajor().GetValue(), d.GetMinor().GetValue(), d.GetAccess()))
}

// CheckUpdate returns the changes of u, a plugin's update of ctr (a
// running container of pod, the one u.container_id names) that the
// grant does not allow: resources of a class it does not grant or over
// its caps, and any update of a container outside its Where (reported
// on the first class the update sets). A runtime that does not have ctr
// at hand (an update of another container than the event's) passes nil
// ctr and pod: Where is then not checked, the runtime checks it through
// its own records of the plugin's scope. The nil grant allows
// everything.
func (g *Grant) CheckUpdate(pod *api.PodSandbox, ctr *api.Container, u *api.ContainerUpdate) []Violation {
	if g == nil || u == nil {
		return nil
	}
	res := u.GetLinux().GetResources()
	if res == nil {
		return nil
	}
	vs := g.checkResources(nil, res, true)
	if ctr != nil && !g.filter.MatchContainer(pod, ctr) {
		vs = append(vs, Violation{Field: firstUpdateClass(res), Value: quote(ctr.GetName()),
			Reason: "container outside the grant's where", Rule: g.label + " where " + g.filter.String()})
	}
	return vs
}

// firstUpdateClass is the update capability of the first class res sets.
func firstUpdateClass(res *api.LinuxResources) capability.Capability {
	switch {
	case memorySet(res.GetMemory()):
		return capability.UpdateMemory
	case cpuSet(res.GetCpu()):
		return capability.UpdateCPU
	case len(res.GetHugepageLimits()) > 0:
		return capability.UpdateHugepageLimits
	case res.GetBlockioClass() != nil:
		return capability.UpdateBlockioClass
	case res.GetRdtClass() != nil:
		return capability.UpdateRdtClass
	case len(res.GetUnified()) > 0:
		return capability.UpdateUnified
	case len(res.GetDevices()) > 0:
		return capability.UpdateDeviceCgroup
	}
	return capability.UpdatePids
}

// CheckEviction returns why the grant does not allow the plugin to
// evict ctr, a container of pod: it does not grant evict, or ctr is
// outside its Where. With ctr nil (see CheckUpdate) Where is not
// checked and the container is named by its ID. The nil grant allows
// everything.
func (g *Grant) CheckEviction(pod *api.PodSandbox, ctr *api.Container, e *api.ContainerEviction) []Violation {
	if g == nil || e == nil {
		return nil
	}
	var vs []Violation
	name := ctr.GetName()
	if ctr == nil {
		name = e.GetContainerId()
	}
	if !g.caps.Has(capability.Evict) {
		vs = g.deny(vs, capability.Evict, quote(name), notGranted)
	} else if ctr != nil && !g.filter.MatchContainer(pod, ctr) {
		vs = append(vs, Violation{Field: capability.Evict, Value: quote(ctr.GetName()),
			Reason: "container outside the grant's where", Rule: g.label + " where " + g.filter.String()})
	}
	return vs
}
