package adaptation

import (
	nrikit "github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/policy"
)

// The capabilities each runtime that embeds this package applies at all
// (nrikit's adaptation.WithAppliedCapabilities), found in its source by
// the name it passes to New: containerd v2.4.2 passes "containerd"
// (version.Name), CRI-O v1.36.3 "cri-o". See docs/policy.md.
//
// At container creation both hand the merged adjustment to
// pkg/runtime-tools/generate, which applies every field (through nrikit's
// ocispec.Apply). Updates of running containers differ:
//   - containerd converts an update to a CRI UpdateContainerResources
//     request (toCRIResources): memory (the limit only), cpu, hugepage
//     limits and unified; it evicts on CreateContainer and UpdateContainer
//     answers.
//   - CRI-O hands the update's resources (LinuxResources.ToOCI) to the
//     OCI runtime's update: memory, cpu, hugepage limits, unified, device
//     rules and pids; it evicts on UpdateContainer answers.
//
// Neither resolves the block I/O or RDT class of an update. Evictions a
// plugin asks for on its own are refused by this package (see the package
// documentation).
func runtimeUpdates(name string) ([]policy.Capability, bool) {
	switch name {
	case "containerd":
		return []policy.Capability{policy.UpdateMemory, policy.UpdateCPU, policy.UpdateHugepageLimits,
			policy.UpdateUnified, policy.Evict}, true
	case "cri-o":
		return []policy.Capability{policy.UpdateMemory, policy.UpdateCPU, policy.UpdateHugepageLimits,
			policy.UpdateUnified, policy.UpdateDeviceCgroup, policy.UpdatePids, policy.Evict}, true
	}
	return nil, false
}

// adjustmentCapabilities are the capabilities of container creation:
// every one but those of updates and evictions.
func adjustmentCapabilities() policy.Capabilities {
	var s policy.Capabilities
	for _, c := range policy.AllCapabilities() {
		if c < policy.UpdateMemory {
			s = s.With(c)
		}
	}
	return s
}

// appliedCapabilities returns what the runtime called name applies, and
// false for a runtime this package does not know, which declares nothing
// (nrikit then takes it to apply everything).
func appliedCapabilities(name string) (policy.Capabilities, bool) {
	updates, ok := runtimeUpdates(name)
	if !ok {
		return policy.Capabilities{}, false
	}
	return adjustmentCapabilities().Union(policy.NewCapabilities(updates...)), true
}

// appliedOption is the nrikit option declaring what the runtime called
// name applies, nil for an unknown runtime.
func appliedOption(name string) nrikit.Option {
	if caps, ok := appliedCapabilities(name); ok {
		return nrikit.WithAppliedCapabilities(caps)
	}
	return nil
}
