package policy

import "github.com/nrikit/nrikit/policy/capability"

// UpstreamCapability is a value of upstream's proposed enum Capability
// (containerd/nri PR #265; see [capability.UpstreamCapability]).
type UpstreamCapability = capability.UpstreamCapability

// The ADJUST_* values of upstream's proposed enum Capability.
const (
	UpstreamAdjustPOSIXRlimits          = capability.UpstreamAdjustPOSIXRlimits          // ADJUST_POSIX_RLIMITS
	UpstreamAdjustLinuxPidLimit         = capability.UpstreamAdjustLinuxPidLimit         // ADJUST_LINUX_PID_LIMIT
	UpstreamAdjustLinuxOOMScore         = capability.UpstreamAdjustLinuxOOMScore         // ADJUST_LINUX_OOM_SCORE
	UpstreamAdjustCDIDevices            = capability.UpstreamAdjustCDIDevices            // ADJUST_CDI_DEVICES
	UpstreamAdjustLinuxNamespaces       = capability.UpstreamAdjustLinuxNamespaces       // ADJUST_LINUX_NAMESPACES
	UpstreamAdjustLinuxSeccompPolicy    = capability.UpstreamAdjustLinuxSeccompPolicy    // ADJUST_LINUX_SECCOMP_POLICY
	UpstreamAdjustLinuxIOPriority       = capability.UpstreamAdjustLinuxIOPriority       // ADJUST_LINUX_IO_PRIORITY
	UpstreamAdjustLinuxContainerArgs    = capability.UpstreamAdjustLinuxContainerArgs    // ADJUST_LINUX_CONTAINER_ARGS
	UpstreamAdjustLinuxSchedulingPolicy = capability.UpstreamAdjustLinuxSchedulingPolicy // ADJUST_LINUX_SCHEDULING_POLICY
	UpstreamAdjustLinuxNetworkDevices   = capability.UpstreamAdjustLinuxNetworkDevices   // ADJUST_LINUX_NETWORK_DEVICES
	UpstreamAdjustLinuxRdtClos          = capability.UpstreamAdjustLinuxRdtClos          // ADJUST_LINUX_RDT_CLOS
	UpstreamAdjustLinuxSysctl           = capability.UpstreamAdjustLinuxSysctl           // ADJUST_LINUX_SYSCTL
	UpstreamAdjustLinuxMemoryPolicy     = capability.UpstreamAdjustLinuxMemoryPolicy     // ADJUST_LINUX_MEMORY_POLICY
)

// UpstreamBaseline is what an upstream runtime applies without
// advertising it (see [capability.UpstreamBaseline]).
func UpstreamBaseline() Capabilities { return capability.UpstreamBaseline() }

// FromUpstreamMask returns the capabilities an upstream mask advertises
// (see [capability.FromUpstreamMask]).
func FromUpstreamMask(words []uint64) Capabilities { return capability.FromUpstreamMask(words) }
