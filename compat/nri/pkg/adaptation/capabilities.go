package adaptation

import (
	nrikit "github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api/capability"
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
func runtimeUpdates(name string) ([]capability.Capability, bool) {
	switch name {
	case "containerd":
		return []capability.Capability{capability.UpdateMemory, capability.UpdateCPU, capability.UpdateHugepageLimits,
			capability.UpdateUnified, capability.Evict}, true
	case "cri-o":
		return []capability.Capability{capability.UpdateMemory, capability.UpdateCPU, capability.UpdateHugepageLimits,
			capability.UpdateUnified, capability.UpdateDeviceCgroup, capability.UpdatePids, capability.Evict}, true
	}
	return nil, false
}

// adjustmentCapabilities are the capabilities of container creation:
// every one but those of updates and evictions.
func adjustmentCapabilities() capability.Set {
	var s capability.Set
	for _, c := range capability.AllCapabilities() {
		if c < capability.UpdateMemory {
			s = s.With(c)
		}
	}
	return s
}

// appliedCapabilities returns what the runtime called name applies, and
// false for a runtime this package does not know, which declares nothing
// (nrikit then takes it to apply everything).
func appliedCapabilities(name string) (capability.Set, bool) {
	updates, ok := runtimeUpdates(name)
	if !ok {
		return capability.Set{}, false
	}
	return adjustmentCapabilities().Union(capability.NewSet(updates...)), true
}

// appliedOption is the nrikit option declaring what the runtime called
// name applies, nil for an unknown runtime.
func appliedOption(name string) nrikit.Option {
	if caps, ok := appliedCapabilities(name); ok {
		return nrikit.WithAppliedCapabilities(caps)
	}
	return nil
}
