package policy

import (
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
)

// globList is a compiled list of globs; it matches a string if one of
// them does.
type globList []filter.Glob

func (l globList) match(s string) bool {
	for i := range l {
		if l[i].Match(s) {
			return true
		}
	}
	return false
}

// adjustRules are the compiled rules of a grant's adjust.
type adjustRules struct {
	env, cdi, sysctl, netDevices globList
	annotations                  annotationRules
	hooks                        []hookRule
	mounts                       mountRules
	rlimits                      map[string]RlimitSpec
	devices                      []deviceRule
	resources                    resourceRules
	oomMin, oomMax               int64
	ioClasses                    uint64 // bit set of api.IOPrioClass
	nsCreate, nsJoin, nsRemove   uint16 // bit sets of namespaceTypes
	schedPolicies                uint64 // bit set of api.LinuxSchedulerPolicy
	minNice, maxPriority         int32
	rdtClos                      globList
	rdtSchemata, rdtMonitoring   bool
	mpolModes                    uint64 // bit set of api.MpolMode
}

// deviceRule is a compiled DeviceSpec.
type deviceRule struct {
	path         filter.Glob
	typ          string
	major, minor int64 // -1: any
}

// resourceRules are the compiled rules of resources or update.
type resourceRules struct {
	memory, cpu, hugepages, devices, pids bool
	maxMemory                             int64
	maxShares                             uint64
	realtime                              bool
	pageSizes                             []string // nil: any
	maxHugepages                          uint64
	blockio, rdt, unified                 globList
	grantAccess                           bool
	maxPids                               int64
}

// namespaceTypes are the Linux namespace types, as the OCI spec names
// them; a type's bit in the rules is its index here.
var namespaceTypes = []string{"pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time"}

// namespaceBit returns the bit of a namespace type, 0 if unknown.
func namespaceBit(t string) uint16 {
	for i, n := range namespaceTypes {
		if n == t {
			return 1 << i
		}
	}
	return 0
}

// rlimitTypes are the POSIX rlimits of the OCI spec.
var rlimitTypes = []string{"RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
	"RLIMIT_LOCKS", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE", "RLIMIT_NPROC",
	"RLIMIT_RSS", "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"}

// adjust compiles a grant's adjust.
func (c *compiler) adjust(g *Grant, path []any, a *AdjustSpec) {
	r := &g.adjust
	list := func(cp capability.Capability, key string, patterns []string) globList {
		if len(patterns) == 0 {
			return nil
		}
		c.allow(g, cp, at(path, key))
		return c.globs(at(path, key), patterns)
	}
	if len(a.Annotations) > 0 {
		c.allow(g, capability.Annotations, at(path, "annotations"))
		r.annotations = c.annotations(at(path, "annotations"), a.Annotations)
	}
	r.env = list(capability.Env, "env", a.Env)
	if len(a.Hooks) > 0 {
		c.allow(g, capability.Hooks, at(path, "hooks"))
		r.hooks = c.hooks(at(path, "hooks"), a.Hooks)
	}
	r.cdi = list(capability.CDIDevices, "cdiDevices", a.CDIDevices)
	r.sysctl = list(capability.Sysctl, "sysctl", a.Sysctl)
	r.netDevices = list(capability.NetDevices, "netDevices", a.NetDevices)
	if a.Mounts != nil {
		c.allow(g, capability.Mounts, at(path, "mounts"))
		r.mounts = c.mounts(at(path, "mounts"), a.Mounts)
	}
	if len(a.Rlimits) > 0 {
		c.allow(g, capability.Rlimits, at(path, "rlimits"))
		r.rlimits = make(map[string]RlimitSpec, len(a.Rlimits))
		for t, spec := range a.Rlimits {
			if !slices.Contains(rlimitTypes, t) {
				c.errorf(at(path, "rlimits", t), "unknown rlimit %q (want one of %s)", t, strings.Join(rlimitTypes, ", "))
			}
			r.rlimits[t] = spec
		}
	}
	if a.Args {
		c.allow(g, capability.Args, at(path, "args"))
	}
	if len(a.Devices) > 0 {
		c.allow(g, capability.Devices, at(path, "devices"))
		for i := range a.Devices {
			if d, ok := c.device(at(path, "devices", i), &a.Devices[i]); ok {
				r.devices = append(r.devices, d)
			}
		}
	}
	if a.Resources != nil {
		r.resources = c.resources(g, at(path, "resources"), a.Resources, false)
	}
	if a.CgroupsPath {
		c.allow(g, capability.CgroupsPath, at(path, "cgroupsPath"))
	}
	if o := a.OOMScoreAdj; o != nil {
		c.allow(g, capability.OOMScoreAdj, at(path, "oomScoreAdj"))
		if o.Min > o.Max || o.Min < -1000 || o.Max > 1000 {
			c.errorf(at(path, "oomScoreAdj"), "want -1000 <= min <= max <= 1000, got min %d, max %d", o.Min, o.Max)
		}
		r.oomMin, r.oomMax = o.Min, o.Max
	}
	if a.IOPriority != nil {
		c.allow(g, capability.IOPriority, at(path, "ioPriority"))
		r.ioClasses = c.enumSet(at(path, "ioPriority", "classes"), a.IOPriority.Classes, api.IOPrioClass_value, "I/O priority class")
	}
	if a.SeccompPolicy {
		c.allow(g, capability.SeccompPolicy, at(path, "seccompPolicy"))
	}
	if ns := a.Namespaces; ns != nil {
		c.allow(g, capability.Namespaces, at(path, "namespaces"))
		r.nsCreate = c.namespaces(at(path, "namespaces", "create"), ns.Create)
		r.nsJoin = c.namespaces(at(path, "namespaces", "join"), ns.Join)
		r.nsRemove = c.namespaces(at(path, "namespaces", "remove"), ns.Remove)
	}
	if s := a.Scheduler; s != nil {
		c.allow(g, capability.Scheduler, at(path, "scheduler"))
		r.schedPolicies = c.enumSet(at(path, "scheduler", "policies"), s.Policies, api.LinuxSchedulerPolicy_value, "scheduling policy")
		if s.MinNice != nil {
			if *s.MinNice < -20 || *s.MinNice > 19 {
				c.errorf(at(path, "scheduler", "minNice"), "want a nice value from -20 to 19, got %d", *s.MinNice)
			}
			r.minNice = *s.MinNice
		}
		if s.MaxPriority != nil {
			if *s.MaxPriority < 0 || *s.MaxPriority > 99 {
				c.errorf(at(path, "scheduler", "maxPriority"), "want a priority from 0 to 99, got %d", *s.MaxPriority)
			}
			r.maxPriority = *s.MaxPriority
		}
	}
	if s := a.Rdt; s != nil {
		c.allow(g, capability.Rdt, at(path, "rdt"))
		r.rdtClos = c.globs(at(path, "rdt", "closIds"), s.ClosIDs)
		r.rdtSchemata, r.rdtMonitoring = s.Schemata, s.Monitoring
	}
	if s := a.MemoryPolicy; s != nil {
		c.allow(g, capability.MemoryPolicy, at(path, "memoryPolicy"))
		r.mpolModes = c.enumSet(at(path, "memoryPolicy", "modes"), s.Modes, api.MpolMode_value, "memory policy mode")
	}
}

// device compiles a device rule.
func (c *compiler) device(path []any, d *DeviceSpec) (deviceRule, bool) {
	r := deviceRule{typ: d.Type, major: -1, minor: -1}
	ok := true
	if !strings.HasPrefix(d.Path, "/") {
		c.errorf(at(path, "path"), "%q is not an absolute path glob", d.Path)
		ok = false
	} else if g, err := filter.CompileGlob(d.Path); err != nil {
		c.errorf(at(path, "path"), "%v", err)
		ok = false
	} else {
		r.path = g
	}
	switch d.Type {
	case "c", "b":
		if d.Major == nil {
			c.errorf(path, "major: required for a %s device: the numbers, not the path, are the device the container opens", d.Type)
			ok = false
		}
	case "p":
		if d.Major != nil || d.Minor != nil {
			c.errorf(path, "a FIFO (type p) has no major or minor number")
			ok = false
		}
	default:
		c.errorf(at(path, "type"), "type %q is not one of c, b, p", d.Type)
		ok = false
	}
	if d.Major != nil {
		r.major = *d.Major
	}
	if d.Minor != nil {
		r.minor = *d.Minor
	}
	if (d.Major != nil && *d.Major < 0) || (d.Minor != nil && *d.Minor < 0) {
		c.errorf(path, "major and minor numbers cannot be negative")
		ok = false
	}
	return r, ok
}

// namespaces compiles a list of namespace types.
func (c *compiler) namespaces(path []any, types []string) uint16 {
	var set uint16
	for i, t := range types {
		b := namespaceBit(t)
		if b == 0 {
			c.errorf(at(path, i), "unknown namespace type %q (want one of %s)", t, strings.Join(namespaceTypes, ", "))
		}
		set |= b
	}
	return set
}

// resources compiles resources (update: the update capabilities).
func (c *compiler) resources(g *Grant, path []any, s *ResourcesSpec, update bool) resourceRules {
	var r resourceRules
	kind := func(adjust, upd capability.Capability) capability.Capability {
		if update {
			return upd
		}
		return adjust
	}
	if s.Memory != nil {
		c.allow(g, kind(capability.Memory, capability.UpdateMemory), at(path, "memory"))
		r.memory, r.maxMemory = true, int64(s.Memory.MaxLimit)
	}
	if s.CPU != nil {
		c.allow(g, kind(capability.CPU, capability.UpdateCPU), at(path, "cpu"))
		r.cpu, r.maxShares, r.realtime = true, s.CPU.MaxShares, s.CPU.Realtime
	}
	if h := s.HugepageLimits; h != nil {
		c.allow(g, kind(capability.HugepageLimits, capability.UpdateHugepageLimits), at(path, "hugepageLimits"))
		r.hugepages, r.pageSizes, r.maxHugepages = true, h.PageSizes, uint64(h.MaxLimit)
	}
	if len(s.BlockioClasses) > 0 {
		c.allow(g, kind(capability.BlockioClass, capability.UpdateBlockioClass), at(path, "blockioClasses"))
		r.blockio = c.globs(at(path, "blockioClasses"), s.BlockioClasses)
	}
	if len(s.RdtClasses) > 0 {
		c.allow(g, kind(capability.RdtClass, capability.UpdateRdtClass), at(path, "rdtClasses"))
		r.rdt = c.globs(at(path, "rdtClasses"), s.RdtClasses)
	}
	if len(s.Unified) > 0 {
		c.allow(g, kind(capability.Unified, capability.UpdateUnified), at(path, "unified"))
		r.unified = c.globs(at(path, "unified"), s.Unified)
	}
	if s.Devices != nil {
		c.allow(g, kind(capability.DeviceCgroup, capability.UpdateDeviceCgroup), at(path, "devices"))
		r.devices, r.grantAccess = true, s.Devices.GrantAccess
	}
	if s.Pids != nil {
		c.allow(g, kind(capability.Pids, capability.UpdatePids), at(path, "pids"))
		if s.Pids.MaxLimit < 0 {
			c.errorf(at(path, "pids", "maxLimit"), "cannot be negative")
		}
		r.pids, r.maxPids = true, s.Pids.MaxLimit
	}
	return r
}
