package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// notGranted is the reason of a change of a kind the grant does not
// allow at all.
const notGranted = "not granted"

// deny appends a violation of kind cp.
func (g *Grant) deny(vs []Violation, cp capability.Capability, value, reason string) []Violation {
	return append(vs, Violation{Field: cp, Value: value, Reason: reason, Rule: g.rules[cp]})
}

// CheckAdjustment returns the changes of adj, a plugin's adjustment of
// ctr (a container of pod being created), that the grant does not
// allow; none (nil) if it allows them all. Setting and removing (a key
// marked with "-") are both changes. The runtime sends a plugin events
// only about containers within the grant's Where, so adjustments are not
// checked against it here. On the allow path it does not allocate. The
// nil grant allows everything.
func (g *Grant) CheckAdjustment(pod *api.PodSandbox, ctr *api.Container, adj *api.ContainerAdjustment) []Violation {
	if g == nil || adj == nil {
		return nil
	}
	var vs []Violation
	r := &g.adjust
	vs = g.checkAnnotations(vs, adj.GetAnnotations())
	for _, m := range adj.GetMounts() {
		if reason := g.checkMount(m); reason != "" {
			vs = g.deny(vs, capability.Mounts, mountValue(m), reason)
		}
	}
	for _, e := range adj.GetEnv() {
		if name := api.ClearRemovalMarker(e.GetKey()); !g.caps.Has(capability.Env) || !r.env.match(name) {
			vs = g.deny(vs, capability.Env, quote(e.GetKey()), g.reason(capability.Env, "name not allowed"))
		}
	}
	if h := adj.GetHooks(); h != nil {
		vs = g.checkHooks(vs, h)
	}
	for _, l := range adj.GetRlimits() {
		if reason := g.checkRlimit(l); reason != "" {
			vs = g.deny(vs, capability.Rlimits, quote(fmt.Sprintf("%s hard %d soft %d", l.GetType(), l.GetHard(), l.GetSoft())), reason)
		}
	}
	for _, d := range adj.GetCDIDevices() {
		if !g.caps.Has(capability.CDIDevices) || !r.cdi.match(d.GetName()) {
			vs = g.deny(vs, capability.CDIDevices, quote(d.GetName()), g.reason(capability.CDIDevices, "name not allowed"))
		}
	}
	if len(adj.GetArgs()) > 0 && !g.caps.Has(capability.Args) {
		vs = g.deny(vs, capability.Args, quote(strings.Join(adj.GetArgs(), " ")), notGranted)
	}
	if l := adj.GetLinux(); l != nil {
		vs = g.checkLinux(vs, l)
	}
	return vs
}

// reason returns why a change of kind cp is refused: not granted at all,
// or the reason of the value rule.
func (g *Grant) reason(cp capability.Capability, rule string) string {
	if !g.caps.Has(cp) {
		return notGranted
	}
	return rule
}

// checkLinux checks the Linux part of an adjustment.
func (g *Grant) checkLinux(vs []Violation, l *api.LinuxContainerAdjustment) []Violation {
	r := &g.adjust
	for _, d := range l.GetDevices() {
		if reason := g.checkDevice(d); reason != "" {
			vs = g.deny(vs, capability.Devices, deviceValue(d), reason)
		}
	}
	if res := l.GetResources(); res != nil {
		vs = g.checkResources(vs, res, false)
	}
	if l.GetCgroupsPath() != "" && !g.caps.Has(capability.CgroupsPath) {
		vs = g.deny(vs, capability.CgroupsPath, quote(l.GetCgroupsPath()), notGranted)
	}
	if o := l.GetOomScoreAdj(); o != nil {
		if v := int64(o.GetValue()); !g.caps.Has(capability.OOMScoreAdj) || v < r.oomMin || v > r.oomMax {
			vs = g.deny(vs, capability.OOMScoreAdj, fmt.Sprint(v), g.reason(capability.OOMScoreAdj, fmt.Sprintf("outside %d..%d", r.oomMin, r.oomMax)))
		}
	}
	if p := l.GetIoPriority(); p != nil {
		if !g.caps.Has(capability.IOPriority) || !inSet(r.ioClasses, int32(p.GetClass())) {
			vs = g.deny(vs, capability.IOPriority, fmt.Sprintf("%s %d", p.GetClass(), p.GetPriority()), g.reason(capability.IOPriority, "class not allowed"))
		}
	}
	if s := l.GetSeccompPolicy(); s != nil && !g.caps.Has(capability.SeccompPolicy) {
		vs = g.deny(vs, capability.SeccompPolicy, quote("default action "+s.GetDefaultAction()), notGranted)
	}
	for _, ns := range l.GetNamespaces() {
		if reason := g.checkNamespace(ns); reason != "" {
			vs = g.deny(vs, capability.Namespaces, quote(ns.GetType()+" "+ns.GetPath()), reason)
		}
	}
	for k := range l.GetSysctl() {
		if !g.caps.Has(capability.Sysctl) || !r.sysctl.match(api.ClearRemovalMarker(k)) {
			vs = g.deny(vs, capability.Sysctl, quote(k), g.reason(capability.Sysctl, "key not allowed"))
		}
	}
	for k := range l.GetNetDevices() {
		if !g.caps.Has(capability.NetDevices) || !r.netDevices.match(api.ClearRemovalMarker(k)) {
			vs = g.deny(vs, capability.NetDevices, quote(k), g.reason(capability.NetDevices, "host interface not allowed"))
		}
	}
	if s := l.GetScheduler(); s != nil {
		if reason := g.checkScheduler(s); reason != "" {
			vs = g.deny(vs, capability.Scheduler, fmt.Sprintf("%s nice %d priority %d", s.GetPolicy(), s.GetNice(), s.GetPriority()), reason)
		}
	}
	if rdt := l.GetRdt(); rdt != nil {
		if reason := g.checkRdt(rdt); reason != "" {
			vs = g.deny(vs, capability.Rdt, quote("clos "+rdt.GetClosId().GetValue()), reason)
		}
	}
	if mp := l.GetMemoryPolicy(); mp != nil {
		if !g.caps.Has(capability.MemoryPolicy) || !inSet(r.mpolModes, int32(mp.GetMode())) {
			vs = g.deny(vs, capability.MemoryPolicy, fmt.Sprintf("%s nodes %s", mp.GetMode(), quote(mp.GetNodes())), g.reason(capability.MemoryPolicy, "mode not allowed"))
		}
	}
	return vs
}

// inSet reports whether the enum value v is in the bit set.
func inSet(set uint64, v int32) bool { return v >= 0 && v < 64 && set&(1<<v) != 0 }

// checkDevice returns why a device node is refused, or "".
func (g *Grant) checkDevice(d *api.LinuxDevice) string {
	if !g.caps.Has(capability.Devices) {
		return notGranted
	}
	p, removed := d.IsMarkedForRemoval()
	if !path.IsAbs(p) || path.Clean(p) != p {
		return "the path is not an absolute clean path"
	}
	if removed {
		for i := range g.adjust.devices {
			if g.adjust.devices[i].path.Match(p) {
				return ""
			}
		}
		return "path not allowed"
	}
	if m := d.GetFileMode(); m != nil && m.GetValue()&^0o777 != 0 {
		return fmt.Sprintf("file_mode %#o has bits other than the permissions (0777)", m.GetValue())
	}
	typ := d.GetType()
	if typ == "u" {
		typ = "c"
	}
	for i := range g.adjust.devices {
		r := &g.adjust.devices[i]
		if r.typ == typ && r.path.Match(p) && (r.major < 0 || r.major == d.GetMajor()) && (r.minor < 0 || r.minor == d.GetMinor()) {
			return ""
		}
	}
	return "no device rule allows this path, type and number"
}

// checkRlimit returns why an rlimit is refused, or "".
func (g *Grant) checkRlimit(l *api.POSIXRlimit) string {
	if !g.caps.Has(capability.Rlimits) {
		return notGranted
	}
	c, ok := g.adjust.rlimits[l.GetType()]
	switch {
	case !ok:
		return "rlimit not allowed"
	case c.Hard > 0 && l.GetHard() > c.Hard:
		return fmt.Sprintf("hard limit over the cap %d", c.Hard)
	case c.Soft > 0 && l.GetSoft() > c.Soft:
		return fmt.Sprintf("soft limit over the cap %d", c.Soft)
	}
	return ""
}

// checkNamespace returns why a namespace change is refused, or "".
func (g *Grant) checkNamespace(ns *api.LinuxNamespace) string {
	if !g.caps.Has(capability.Namespaces) {
		return notGranted
	}
	t, removed := ns.IsMarkedForRemoval()
	bit := namespaceBit(t)
	switch {
	case removed && g.adjust.nsRemove&bit == 0:
		return "removing this namespace type (sharing the host's) not allowed"
	case removed:
		return ""
	case ns.GetPath() != "" && g.adjust.nsJoin&bit == 0:
		return "joining a namespace of this type not allowed"
	case ns.GetPath() == "" && g.adjust.nsCreate&bit == 0:
		return "creating a namespace of this type not allowed"
	}
	return ""
}

// checkScheduler returns why a scheduler setting is refused, or "".
func (g *Grant) checkScheduler(s *api.LinuxScheduler) string {
	r := &g.adjust
	switch {
	case !g.caps.Has(capability.Scheduler):
		return notGranted
	case !inSet(r.schedPolicies, int32(s.GetPolicy())):
		return "policy not allowed"
	case s.GetNice() < r.minNice:
		return fmt.Sprintf("nice below %d", r.minNice)
	case s.GetPriority() > r.maxPriority:
		return fmt.Sprintf("priority over %d", r.maxPriority)
	}
	return ""
}

// checkRdt returns why an RDT setting is refused, or "".
func (g *Grant) checkRdt(rdt *api.LinuxRdt) string {
	r := &g.adjust
	switch {
	case !g.caps.Has(capability.Rdt):
		return notGranted
	case rdt.GetClosId() != nil && !r.rdtClos.match(rdt.GetClosId().GetValue()):
		return "class of service not allowed"
	case rdt.GetSchemata() != nil && !r.rdtSchemata:
		return "schemata not allowed"
	case rdt.GetEnableMonitoring().GetValue() && !r.rdtMonitoring:
		return "monitoring not allowed"
	}
	return ""
}

// mountValue renders a mount for a violation.
func mountValue(m *api.Mount) string {
	return quote(fmt.Sprintf("{source: %s, destination: %s, type: %s, options: [%s]}",
		m.GetSource(), m.GetDestination(), m.GetType(), strings.Join(m.GetOptions(), ", ")))
}

// deviceValue renders a device node for a violation.
func deviceValue(d *api.LinuxDevice) string {
	return quote(fmt.Sprintf("%s %s %d:%d", d.GetPath(), d.GetType(), d.GetMajor(), d.GetMinor()))
}
