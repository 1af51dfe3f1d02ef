package capability

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestNamesFromFieldTable checks that the constants line up with api's
// field table: one per row, in its order, then Evict. A field added to the
// proto without its constant here fails the count; constants out of the
// table's order fail the names.
func TestNamesFromFieldTable(t *testing.T) {
	if n := len(api.CapabilityTable()); Count != n+1 {
		t.Fatalf("%d capabilities, field table has %d rows (+ evict): add the new field's constant in table order", Count, n)
	}
	for c, want := range map[Capability]string{
		Annotations: "annotations", Hooks: "hooks", Devices: "linux.devices", Memory: "linux.resources.memory",
		DeviceCgroup: "linux.resources.devices", Pids: "linux.resources.pids", CgroupsPath: "linux.cgroups_path",
		MemoryPolicy: "linux.memory_policy", Rlimits: "rlimits", CDIDevices: "cdi_devices", Args: "args",
		UpdateMemory: "update.linux.resources.memory", UpdatePids: "update.linux.resources.pids", Evict: "evict",
	} {
		if got := c.String(); got != want {
			t.Errorf("capability %d is %q, want %q", c, got, want)
		}
	}
}

// TestUpstreamFromFieldTable checks the upstream values the table gives
// against upstream's enum (containerd/nri PR #265).
func TestUpstreamFromFieldTable(t *testing.T) {
	want := map[Capability]UpstreamCapability{
		Rlimits: UpstreamAdjustPOSIXRlimits, Pids: UpstreamAdjustLinuxPidLimit, UpdatePids: UpstreamAdjustLinuxPidLimit,
		OOMScoreAdj: UpstreamAdjustLinuxOOMScore, CDIDevices: UpstreamAdjustCDIDevices, Namespaces: UpstreamAdjustLinuxNamespaces,
		SeccompPolicy: UpstreamAdjustLinuxSeccompPolicy, IOPriority: UpstreamAdjustLinuxIOPriority, Args: UpstreamAdjustLinuxContainerArgs,
		Scheduler: UpstreamAdjustLinuxSchedulingPolicy, NetDevices: UpstreamAdjustLinuxNetworkDevices, Rdt: UpstreamAdjustLinuxRdtClos,
		Sysctl: UpstreamAdjustLinuxSysctl, MemoryPolicy: UpstreamAdjustLinuxMemoryPolicy,
	}
	for _, c := range AllCapabilities() {
		got, ok := c.Upstream()
		w, wok := want[c]
		if ok != wok || got != w {
			t.Errorf("%s: upstream %d, %v; want %d, %v", c, got, ok, w, wok)
		}
	}
}
