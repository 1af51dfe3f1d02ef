package policy

import (
	"math/bits"
	"strings"
)

// Capability is one kind of change a plugin can make: an adjustment
// field of api.ContainerAdjustment (resources split by class), a class of
// resources in an update of a running container, or an eviction. Its
// name (String) is stable: it names the field of a [Violation] (and so
// the "field" label of the runtime's denied metric) and an entry of the
// capability set a runtime tells a plugin at Configure.
type Capability uint8

// The capabilities. Adjustment fields are named by their path in
// api.ContainerAdjustment (proto field names), updates by "update."
// and the path in api.ContainerUpdate.
const (
	Annotations          Capability = iota // annotations
	Mounts                                 // mounts
	Env                                    // env
	Hooks                                  // hooks
	Rlimits                                // rlimits
	CDIDevices                             // cdi_devices
	Args                                   // args
	Devices                                // linux.devices
	Memory                                 // linux.resources.memory
	CPU                                    // linux.resources.cpu
	HugepageLimits                         // linux.resources.hugepage_limits
	BlockioClass                           // linux.resources.blockio_class
	RdtClass                               // linux.resources.rdt_class
	Unified                                // linux.resources.unified
	DeviceCgroup                           // linux.resources.devices
	Pids                                   // linux.resources.pids
	CgroupsPath                            // linux.cgroups_path
	OOMScoreAdj                            // linux.oom_score_adj
	IOPriority                             // linux.io_priority
	SeccompPolicy                          // linux.seccomp_policy
	Namespaces                             // linux.namespaces
	Sysctl                                 // linux.sysctl
	NetDevices                             // linux.net_devices
	Scheduler                              // linux.scheduler
	Rdt                                    // linux.rdt
	MemoryPolicy                           // linux.memory_policy
	UpdateMemory                           // update.linux.resources.memory
	UpdateCPU                              // update.linux.resources.cpu
	UpdateHugepageLimits                   // update.linux.resources.hugepage_limits
	UpdateBlockioClass                     // update.linux.resources.blockio_class
	UpdateRdtClass                         // update.linux.resources.rdt_class
	UpdateUnified                          // update.linux.resources.unified
	UpdateDeviceCgroup                     // update.linux.resources.devices
	UpdatePids                             // update.linux.resources.pids
	Evict                                  // evict

	numCapabilities = iota
)

// capabilityNames are the stable names, by Capability.
var capabilityNames = [numCapabilities]string{
	Annotations:          "annotations",
	Mounts:               "mounts",
	Env:                  "env",
	Hooks:                "hooks",
	Rlimits:              "rlimits",
	CDIDevices:           "cdi_devices",
	Args:                 "args",
	Devices:              "linux.devices",
	Memory:               "linux.resources.memory",
	CPU:                  "linux.resources.cpu",
	HugepageLimits:       "linux.resources.hugepage_limits",
	BlockioClass:         "linux.resources.blockio_class",
	RdtClass:             "linux.resources.rdt_class",
	Unified:              "linux.resources.unified",
	DeviceCgroup:         "linux.resources.devices",
	Pids:                 "linux.resources.pids",
	CgroupsPath:          "linux.cgroups_path",
	OOMScoreAdj:          "linux.oom_score_adj",
	IOPriority:           "linux.io_priority",
	SeccompPolicy:        "linux.seccomp_policy",
	Namespaces:           "linux.namespaces",
	Sysctl:               "linux.sysctl",
	NetDevices:           "linux.net_devices",
	Scheduler:            "linux.scheduler",
	Rdt:                  "linux.rdt",
	MemoryPolicy:         "linux.memory_policy",
	UpdateMemory:         "update.linux.resources.memory",
	UpdateCPU:            "update.linux.resources.cpu",
	UpdateHugepageLimits: "update.linux.resources.hugepage_limits",
	UpdateBlockioClass:   "update.linux.resources.blockio_class",
	UpdateRdtClass:       "update.linux.resources.rdt_class",
	UpdateUnified:        "update.linux.resources.unified",
	UpdateDeviceCgroup:   "update.linux.resources.devices",
	UpdatePids:           "update.linux.resources.pids",
	Evict:                "evict",
}

// String returns the capability's stable name, such as "linux.devices".
func (c Capability) String() string {
	if int(c) < numCapabilities {
		return capabilityNames[c]
	}
	return "unknown"
}

// ParseCapability returns the capability of a stable name.
func ParseCapability(name string) (Capability, bool) {
	for c, n := range capabilityNames {
		if n == name {
			return Capability(c), true
		}
	}
	return 0, false
}

// AllCapabilities returns every capability, in order.
func AllCapabilities() []Capability {
	out := make([]Capability, numCapabilities)
	for i := range out {
		out[i] = Capability(i)
	}
	return out
}

// Capabilities is a set of capabilities: what a grant allows, what an
// embedding runtime applies, and their intersection, which the runtime
// tells the plugin. The zero value is the empty set; it is a small value,
// compared with ==.
type Capabilities struct{ bits uint64 }

// All is the set of every capability: what a plugin may do without a
// policy.
func All() Capabilities { return Capabilities{bits: 1<<numCapabilities - 1} }

// NewCapabilities returns the set of caps.
func NewCapabilities(caps ...Capability) Capabilities {
	var s Capabilities
	for _, c := range caps {
		s = s.With(c)
	}
	return s
}

// ParseCapabilities returns the set of the named capabilities, and the
// names it does not know (a newer peer's), which it leaves out.
func ParseCapabilities(names []string) (Capabilities, []string) {
	var s Capabilities
	var unknown []string
	for _, n := range names {
		if c, ok := ParseCapability(n); ok {
			s = s.With(c)
		} else {
			unknown = append(unknown, n)
		}
	}
	return s, unknown
}

// With returns s with c added.
func (s Capabilities) With(c Capability) Capabilities {
	if int(c) < numCapabilities {
		s.bits |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Capabilities) Has(c Capability) bool { return int(c) < numCapabilities && s.bits&(1<<c) != 0 }

// Intersect returns the capabilities in both s and o.
func (s Capabilities) Intersect(o Capabilities) Capabilities {
	return Capabilities{bits: s.bits & o.bits}
}

// Union returns the capabilities in s or o.
func (s Capabilities) Union(o Capabilities) Capabilities { return Capabilities{bits: s.bits | o.bits} }

// Missing returns the capabilities of want that s lacks: what a plugin
// requires and is refused.
func (s Capabilities) Missing(want Capabilities) Capabilities {
	return Capabilities{bits: want.bits &^ s.bits}
}

// Empty reports whether s has no capability.
func (s Capabilities) Empty() bool { return s.bits == 0 }

// Len returns the number of capabilities in s.
func (s Capabilities) Len() int { return bits.OnesCount64(s.bits) }

// List returns the capabilities of s in order.
func (s Capabilities) List() []Capability {
	out := make([]Capability, 0, s.Len())
	for c := range Capability(numCapabilities) {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Names returns the stable names of the capabilities of s, in order.
func (s Capabilities) Names() []string {
	out := make([]string, 0, s.Len())
	for _, c := range s.List() {
		out = append(out, c.String())
	}
	return out
}

// String returns the names joined by ",", "none" for the empty set, or
// "all".
func (s Capabilities) String() string {
	switch s {
	case Capabilities{}:
		return "none"
	case All():
		return "all"
	}
	return strings.Join(s.Names(), ",")
}
