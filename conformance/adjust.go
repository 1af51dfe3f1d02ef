package conformance

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// findings collects what is wrong with a plugin's answers: malformed
// entries and entries of one answer that contradict each other.
type findings struct {
	malformed []string
	conflicts []string
	// refused are the changes the plugin's grant does not allow
	// (PluginConfig.Policy), "EVENT: violation" each.
	refused []string
}

func (f *findings) bad(where, format string, args ...any) {
	f.malformed = append(f.malformed, where+": "+fmt.Sprintf(format, args...))
}

func (f *findings) conflict(where, format string, args ...any) {
	f.conflicts = append(f.conflicts, where+": "+fmt.Sprintf(format, args...))
}

// keyed tracks the entries of one compound field of one answer, to find the
// same key set twice to different values. Removals never conflict: removing
// an entry and setting it again is how a plugin takes it over.
type keyed struct {
	field string
	set   map[string]proto.Message
}

func newKeyed(field string) *keyed { return &keyed{field: field, set: map[string]proto.Message{}} }

func (k *keyed) add(f *findings, where, key string, m proto.Message) {
	if prev, ok := k.set[key]; ok && !proto.Equal(prev, m) {
		f.conflict(where, "%s %q set twice with different values", k.field, key)
		return
	}
	k.set[key] = m
}

// validKey checks a compound-field key that may carry a removal marker. It
// reports whether the entry is a removal, and false, false if the key is
// malformed.
func validKey(f *findings, where, field, key string) (removal, ok bool) {
	name, removal := api.IsMarkedForRemoval(key)
	if name == "" {
		if removal {
			f.bad(where, "%s removal marker %q names nothing", field, key)
		} else {
			f.bad(where, "%s without a key", field)
		}
		return false, false
	}
	return removal, true
}

// checkAdjustment inspects a ContainerAdjustment.
func checkAdjustment(f *findings, where string, a *api.ContainerAdjustment) {
	if a == nil {
		return
	}
	for key := range a.GetAnnotations() {
		validKey(f, where, "annotation", key)
	}
	mounts := newKeyed("mount")
	for _, m := range a.GetMounts() {
		removal, ok := validKey(f, where, "mount", m.GetDestination())
		switch {
		case !ok:
		case removal && (m.GetSource() != "" || m.GetType() != "" || len(m.GetOptions()) > 0):
			f.bad(where, "mount removal marker %q carries a source, type or options", m.GetDestination())
		case !removal:
			if !strings.HasPrefix(m.GetDestination(), "/") {
				f.bad(where, "mount destination %q is not an absolute path", m.GetDestination())
			}
			mounts.add(f, where, m.GetDestination(), m)
		}
	}
	env := newKeyed("env")
	for _, e := range a.GetEnv() {
		removal, ok := validKey(f, where, "env", e.GetKey())
		switch {
		case !ok:
		case strings.Contains(e.GetKey(), "="):
			f.bad(where, "env name %q contains '='", e.GetKey())
		case removal && e.GetValue() != "":
			f.bad(where, "env removal marker %q carries a value", e.GetKey())
		case !removal:
			env.add(f, where, e.GetKey(), e)
		}
	}
	for _, h := range allHooks(a.GetHooks()) {
		if h.GetPath() == "" {
			f.bad(where, "OCI hook without a path")
		}
	}
	rlimits := newKeyed("rlimit")
	for _, r := range a.GetRlimits() {
		switch {
		case r.GetType() == "":
			f.bad(where, "rlimit without a type")
		case r.GetSoft() > r.GetHard():
			f.bad(where, "rlimit %s has soft limit %d above hard limit %d", r.GetType(), r.GetSoft(), r.GetHard())
		default:
			rlimits.add(f, where, r.GetType(), r)
		}
	}
	cdi := newKeyed("CDI device")
	for _, d := range a.GetCDIDevices() {
		if !strings.Contains(d.GetName(), "=") {
			f.bad(where, "CDI device %q is not a qualified name (vendor/class=name)", d.GetName())
			continue
		}
		cdi.add(f, where, d.GetName(), d)
	}
	checkLinuxAdjustment(f, where, a.GetLinux())
}

func allHooks(h *api.Hooks) []*api.Hook {
	if h == nil {
		return nil
	}
	var all []*api.Hook
	for _, l := range [][]*api.Hook{h.GetPrestart(), h.GetCreateRuntime(), h.GetCreateContainer(), h.GetStartContainer(), h.GetPoststart(), h.GetPoststop()} {
		all = append(all, l...)
	}
	return all
}

var namespaceTypes = map[string]bool{
	"pid": true, "network": true, "mount": true, "ipc": true, "uts": true, "user": true, "cgroup": true, "time": true,
}

var deviceTypes = map[string]bool{"c": true, "b": true, "u": true, "p": true}

func checkLinuxAdjustment(f *findings, where string, l *api.LinuxContainerAdjustment) {
	if l == nil {
		return
	}
	devices := newKeyed("device")
	for _, d := range l.GetDevices() {
		removal, ok := validKey(f, where, "device", d.GetPath())
		switch {
		case !ok || removal:
		case !deviceTypes[d.GetType()]:
			f.bad(where, "device %s has invalid type %q", d.GetPath(), d.GetType())
		default:
			devices.add(f, where, d.GetPath(), d)
		}
	}
	namespaces := newKeyed("namespace")
	for _, n := range l.GetNamespaces() {
		removal, ok := validKey(f, where, "namespace", n.GetType())
		name := api.ClearRemovalMarker(n.GetType())
		switch {
		case !ok:
		case !namespaceTypes[name]:
			f.bad(where, "unknown namespace type %q", n.GetType())
		case !removal:
			namespaces.add(f, where, name, n)
		}
	}
	for key := range l.GetSysctl() {
		validKey(f, where, "sysctl", key)
	}
	for key := range l.GetNetDevices() {
		validKey(f, where, "net device", key)
	}
	if rdt := l.GetRdt(); rdt != nil && rdt.GetRemove() &&
		(rdt.GetClosId() != nil || rdt.GetSchemata() != nil || rdt.GetEnableMonitoring() != nil) {
		f.bad(where, "RDT removal marker carries settings")
	}
	checkResources(f, where, l.GetResources())
}

func checkResources(f *findings, where string, r *api.LinuxResources) {
	if r == nil {
		return
	}
	pages := newKeyed("hugepage limit")
	for _, h := range r.GetHugepageLimits() {
		if h.GetPageSize() == "" {
			f.bad(where, "hugepage limit without a page size")
			continue
		}
		pages.add(f, where, h.GetPageSize(), h)
	}
	for key := range r.GetUnified() {
		if key == "" {
			f.bad(where, "unified cgroup setting without a key")
		}
	}
	if m := r.GetMemory(); m != nil && m.GetLimit() != nil && m.GetLimit().GetValue() < -1 {
		f.bad(where, "memory limit %d is negative", m.GetLimit().GetValue())
	}
}

// checkUpdates inspects container updates: each must name a known
// container and carry resources; two updates of one container in one answer
// must agree.
func checkUpdates(f *findings, where string, updates []*api.ContainerUpdate, known map[string]bool) {
	seen := newKeyed("update of container")
	for _, u := range updates {
		id := u.GetContainerId()
		switch {
		case id == "":
			f.bad(where, "update without a container ID")
		case !known[id]:
			f.bad(where, "update names unknown container %q", id)
		case u.GetLinux().GetResources() == nil:
			f.bad(where, "update of container %q carries no resources", id)
		default:
			seen.add(f, where, id, u)
		}
		checkResources(f, where, u.GetLinux().GetResources())
	}
}

// checkEvictions inspects evictions: each must name a known container.
func checkEvictions(f *findings, where string, evictions []*api.ContainerEviction, known map[string]bool) {
	for _, e := range evictions {
		switch id := e.GetContainerId(); {
		case id == "":
			f.bad(where, "eviction without a container ID")
		case !known[id]:
			f.bad(where, "eviction names unknown container %q", id)
		}
	}
}

// checkAnswer inspects the answer to an event.
func checkAnswer(f *findings, ev api.Event, resp proto.Message, known map[string]bool) {
	where := ev.Name()
	switch r := resp.(type) {
	case *api.CreateContainerResponse:
		checkAdjustment(f, where, r.GetAdjust())
		checkUpdates(f, where, r.GetUpdate(), known)
		checkEvictions(f, where, r.GetEvict(), known)
	case *api.UpdateContainerResponse:
		checkUpdates(f, where, r.GetUpdate(), known)
		checkEvictions(f, where, r.GetEvict(), known)
	case *api.StopContainerResponse:
		checkUpdates(f, where, r.GetUpdate(), known)
	case *api.ValidateContainerAdjustmentResponse:
		if r.GetReject() && r.GetReason() == "" {
			f.bad(where, "rejection without a reason")
		}
	}
}
