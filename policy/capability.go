package policy

import "github.com/nrikit/nrikit/policy/capability"

// The capability set lives in package capability, which depends on
// nothing, so that plugins (WASM guests too) can use it without linking
// this package; these are its names here.

// Capability is one kind of change a plugin can make: an adjustment
// field of api.ContainerAdjustment (resources split by class), a class of
// resources in an update of a running container, or an eviction (see
// [capability.Capability]). Its name (String) is stable: it names the
// field of a [Violation] (and so the "field" label of the runtime's
// denied metric) and an entry of the capability set a runtime tells a
// plugin at Configure.
type Capability = capability.Capability

// Capabilities is a set of capabilities: what a grant allows, what an
// embedding runtime applies, and their intersection, which the runtime
// tells the plugin (see [capability.Set]).
type Capabilities = capability.Set

// The capabilities.
const (
	Annotations          = capability.Annotations          // annotations
	Mounts               = capability.Mounts               // mounts
	Env                  = capability.Env                  // env
	Hooks                = capability.Hooks                // hooks
	Rlimits              = capability.Rlimits              // rlimits
	CDIDevices           = capability.CDIDevices           // cdi_devices
	Args                 = capability.Args                 // args
	Devices              = capability.Devices              // linux.devices
	Memory               = capability.Memory               // linux.resources.memory
	CPU                  = capability.CPU                  // linux.resources.cpu
	HugepageLimits       = capability.HugepageLimits       // linux.resources.hugepage_limits
	BlockioClass         = capability.BlockioClass         // linux.resources.blockio_class
	RdtClass             = capability.RdtClass             // linux.resources.rdt_class
	Unified              = capability.Unified              // linux.resources.unified
	DeviceCgroup         = capability.DeviceCgroup         // linux.resources.devices
	Pids                 = capability.Pids                 // linux.resources.pids
	CgroupsPath          = capability.CgroupsPath          // linux.cgroups_path
	OOMScoreAdj          = capability.OOMScoreAdj          // linux.oom_score_adj
	IOPriority           = capability.IOPriority           // linux.io_priority
	SeccompPolicy        = capability.SeccompPolicy        // linux.seccomp_policy
	Namespaces           = capability.Namespaces           // linux.namespaces
	Sysctl               = capability.Sysctl               // linux.sysctl
	NetDevices           = capability.NetDevices           // linux.net_devices
	Scheduler            = capability.Scheduler            // linux.scheduler
	Rdt                  = capability.Rdt                  // linux.rdt
	MemoryPolicy         = capability.MemoryPolicy         // linux.memory_policy
	UpdateMemory         = capability.UpdateMemory         // update.linux.resources.memory
	UpdateCPU            = capability.UpdateCPU            // update.linux.resources.cpu
	UpdateHugepageLimits = capability.UpdateHugepageLimits // update.linux.resources.hugepage_limits
	UpdateBlockioClass   = capability.UpdateBlockioClass   // update.linux.resources.blockio_class
	UpdateRdtClass       = capability.UpdateRdtClass       // update.linux.resources.rdt_class
	UpdateUnified        = capability.UpdateUnified        // update.linux.resources.unified
	UpdateDeviceCgroup   = capability.UpdateDeviceCgroup   // update.linux.resources.devices
	UpdatePids           = capability.UpdatePids           // update.linux.resources.pids
	Evict                = capability.Evict                // evict
)

// numCapabilities is the number of capabilities.
const numCapabilities = capability.Count

// ParseCapability returns the capability of a stable name.
func ParseCapability(name string) (Capability, bool) { return capability.Parse(name) }

// AllCapabilities returns every capability, in order.
func AllCapabilities() []Capability { return capability.AllCapabilities() }

// All is the set of every capability: what a plugin may do without a
// policy.
func All() Capabilities { return capability.All() }

// NewCapabilities returns the set of caps.
func NewCapabilities(caps ...Capability) Capabilities { return capability.NewSet(caps...) }

// ParseCapabilities returns the set of the named capabilities, and the
// names it does not know (a newer peer's), which it leaves out.
func ParseCapabilities(names []string) (Capabilities, []string) { return capability.ParseSet(names) }
