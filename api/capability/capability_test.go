package capability_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api/capability"
)

// TestCapabilityNames checks that every capability has a distinct name
// that parses back.
func TestCapabilityNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range capability.AllCapabilities() {
		n := c.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Errorf("capability %d: name %q empty or not unique", c, n)
		}
		seen[n] = true
		if back, ok := capability.Parse(n); !ok || back != c {
			t.Errorf("Parse(%q) = %v, %v", n, back, ok)
		}
	}
	if capability.Capability(capability.Count).String() != "unknown" {
		t.Error("an out-of-range capability has a name")
	}
}

// TestCapabilitiesSet checks the set operations and the parsing of names
// from a peer, which may know more.
func TestCapabilitiesSet(t *testing.T) {
	s, unknown := capability.ParseSet([]string{"env", "linux.devices", "future.field"})
	if s != capability.NewSet(capability.Env, capability.Devices) || !slices.Equal(unknown, []string{"future.field"}) {
		t.Errorf("ParseSet: %v, unknown %v", s, unknown)
	}
	if s.String() != "env,linux.devices" || s.Len() != 2 || !s.Has(capability.Env) || s.Has(capability.Args) {
		t.Errorf("set %v", s)
	}
	applied := capability.NewSet(capability.Env, capability.Mounts)
	if got := s.Intersect(applied); got != capability.NewSet(capability.Env) {
		t.Errorf("Intersect: %v", got)
	}
	if got := applied.Missing(s); got != capability.NewSet(capability.Devices) {
		t.Errorf("Missing: %v", got)
	}
	if (capability.Set{}).String() != "none" || capability.All().String() != "all" || capability.All().Len() != capability.Count {
		t.Errorf("none %v, all %v", capability.Set{}, capability.All())
	}
	if got := s.Union(applied); got != capability.NewSet(capability.Env, capability.Devices, capability.Mounts) || got.Empty() {
		t.Errorf("Union: %v", got)
	}
}

// TestUpstreamMask checks the mapping to upstream's proposed capability
// mask (containerd/nri PR #265): bit value%64 of word value/64 for each
// ADJUST_* capability, and back with the baseline of older fields.
func TestUpstreamMask(t *testing.T) {
	s := capability.NewSet(capability.Rlimits, capability.Sysctl, capability.MemoryPolicy, capability.Env)
	mask := s.UpstreamMask()
	want := uint64(1<<0 | 1<<21 | 1<<25) // ADJUST_POSIX_RLIMITS, ADJUST_LINUX_SYSCTL, ADJUST_LINUX_MEMORY_POLICY
	if len(mask) != 1 || mask[0] != want {
		t.Errorf("UpstreamMask = %b, want %b", mask, want)
	}
	back := capability.FromUpstreamMask(mask)
	for _, c := range []capability.Capability{capability.Rlimits, capability.Sysctl, capability.MemoryPolicy, capability.Env, capability.Mounts, capability.Devices, capability.Memory, capability.UpdateCPU, capability.Evict} {
		if !back.Has(c) {
			t.Errorf("FromUpstreamMask lacks %s", c)
		}
	}
	for _, c := range []capability.Capability{capability.Args, capability.Namespaces, capability.Pids, capability.UpdatePids, capability.CDIDevices} {
		if back.Has(c) {
			t.Errorf("FromUpstreamMask has %s, which the mask does not advertise", c)
		}
	}
	if u, ok := capability.Args.Upstream(); !ok || u != capability.UpstreamAdjustLinuxContainerArgs {
		t.Errorf("Args.Upstream() = %v, %v", u, ok)
	}
	if _, ok := capability.Env.Upstream(); ok {
		t.Error("env has an upstream capability value")
	}
	if got := capability.FromUpstreamMask(nil); got != capability.UpstreamBaseline() || strings.Contains(got.String(), "args") {
		t.Errorf("empty mask: %v", got)
	}
	if (capability.Set{}).UpstreamMask() != nil {
		t.Error("the empty set has an upstream mask")
	}
}
