// Package capability is the set of kinds of change an NRI plugin can
// make, by stable name: what the runtime tells a plugin at Configure (a
// part of the protocol, beside package api), what an embedding runtime
// applies and what a grant of package policy allows. The names and
// upstream values come from api's field table (api.CapabilityTable). It
// depends on nothing but api and the standard library, so that a plugin
// (a WASM guest too) can use it without linking the policy engine.
package capability

import (
	"math/bits"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// Capability is one kind of change a plugin can make: an adjustment
// field of api.ContainerAdjustment (resources split by class), a class of
// resources in an update of a running container, or an eviction. Its
// name (String) is stable: it names the field of a policy violation (and
// so the "field" label of the runtime's denied metric) and an entry of
// the capability set a runtime tells a plugin at Configure.
type Capability uint8

// The capabilities: the adjustment and update fields of api's field
// table (api.CapabilityTable, in proto order), then eviction. Adjustment
// fields are named by their path in api.ContainerAdjustment (proto field
// names), updates by "update." and the path in api.ContainerUpdate.
const (
	Annotations          Capability = iota // annotations
	Mounts                                 // mounts
	Env                                    // env
	Hooks                                  // hooks
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
	Rlimits                                // rlimits
	CDIDevices                             // cdi_devices
	Args                                   // args
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

// Count is the number of capabilities.
const Count = numCapabilities

// fieldTable is api's capability table: row c is Capability c, for every
// capability but Evict.
var fieldTable = api.CapabilityTable()

// capabilityNames are the stable names, by Capability: the field table's,
// then "evict". A read-only table.
var capabilityNames = func() (names [numCapabilities]string) {
	for c, row := range fieldTable {
		if c < int(Evict) {
			names[c] = row.Name
		}
	}
	names[Evict] = "evict"
	return names
}()

// Field returns the row of api's capability table that c is: the
// adjustment or update field it allows. Evict is no field.
func (c Capability) Field() (api.CapabilityInfo, bool) {
	if int(c) >= len(fieldTable) || c >= Evict {
		return api.CapabilityInfo{}, false
	}
	return fieldTable[c], true
}

// String returns the capability's stable name, such as "linux.devices".
func (c Capability) String() string {
	if int(c) < numCapabilities {
		return capabilityNames[c]
	}
	return "unknown"
}

// Parse returns the capability of a stable name.
func Parse(name string) (Capability, bool) {
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

// Set is a set of capabilities: what a grant allows, what an
// embedding runtime applies, and their intersection, which the runtime
// tells the plugin. The zero value is the empty set; it is a small value,
// compared with ==.
type Set struct{ bits uint64 }

// All is the set of every capability: what a plugin may do without a
// policy.
func All() Set { return Set{bits: 1<<numCapabilities - 1} }

// NewSet returns the set of caps.
func NewSet(caps ...Capability) Set {
	var s Set
	for _, c := range caps {
		s = s.With(c)
	}
	return s
}

// ParseSet returns the set of the named capabilities, and the
// names it does not know (a newer peer's), which it leaves out.
func ParseSet(names []string) (Set, []string) {
	var s Set
	var unknown []string
	for _, n := range names {
		if c, ok := Parse(n); ok {
			s = s.With(c)
		} else {
			unknown = append(unknown, n)
		}
	}
	return s, unknown
}

// With returns s with c added.
func (s Set) With(c Capability) Set {
	if int(c) < numCapabilities {
		s.bits |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c Capability) bool { return int(c) < numCapabilities && s.bits&(1<<c) != 0 }

// Intersect returns the capabilities in both s and o.
func (s Set) Intersect(o Set) Set {
	return Set{bits: s.bits & o.bits}
}

// Union returns the capabilities in s or o.
func (s Set) Union(o Set) Set { return Set{bits: s.bits | o.bits} }

// Missing returns the capabilities of want that s lacks: what a plugin
// requires and is refused.
func (s Set) Missing(want Set) Set {
	return Set{bits: want.bits &^ s.bits}
}

// Empty reports whether s has no capability.
func (s Set) Empty() bool { return s.bits == 0 }

// Len returns the number of capabilities in s.
func (s Set) Len() int { return bits.OnesCount64(s.bits) }

// List returns the capabilities of s in order.
func (s Set) List() []Capability {
	out := make([]Capability, 0, s.Len())
	for c := range Capability(numCapabilities) {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// Names returns the stable names of the capabilities of s, in order.
func (s Set) Names() []string {
	out := make([]string, 0, s.Len())
	for _, c := range s.List() {
		out = append(out, c.String())
	}
	return out
}

// String returns the names joined by ",", "none" for the empty set, or
// "all".
func (s Set) String() string {
	switch s {
	case Set{}:
		return "none"
	case All():
		return "all"
	}
	return strings.Join(s.Names(), ",")
}
