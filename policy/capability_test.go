package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestCapabilityNames checks that every capability has a distinct name
// that parses back.
func TestCapabilityNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range AllCapabilities() {
		n := c.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Errorf("capability %d: name %q empty or not unique", c, n)
		}
		seen[n] = true
		if back, ok := ParseCapability(n); !ok || back != c {
			t.Errorf("ParseCapability(%q) = %v, %v", n, back, ok)
		}
		if specKey(c) == "" {
			t.Errorf("capability %s has no policy key", n)
		}
	}
	if Capability(numCapabilities).String() != "unknown" {
		t.Error("an out-of-range capability has a name")
	}
}

// TestCapabilitiesSet checks the set operations and the parsing of names
// from a peer, which may know more.
func TestCapabilitiesSet(t *testing.T) {
	s, unknown := ParseCapabilities([]string{"env", "linux.devices", "future.field"})
	if s != NewCapabilities(Env, Devices) || !slices.Equal(unknown, []string{"future.field"}) {
		t.Errorf("ParseCapabilities: %v, unknown %v", s, unknown)
	}
	if s.String() != "env,linux.devices" || s.Len() != 2 || !s.Has(Env) || s.Has(Args) {
		t.Errorf("set %v", s)
	}
	applied := NewCapabilities(Env, Mounts)
	if got := s.Intersect(applied); got != NewCapabilities(Env) {
		t.Errorf("Intersect: %v", got)
	}
	if got := applied.Missing(s); got != NewCapabilities(Devices) {
		t.Errorf("Missing: %v", got)
	}
	if (Capabilities{}).String() != "none" || All().String() != "all" || All().Len() != numCapabilities {
		t.Errorf("none %v, all %v", Capabilities{}, All())
	}
	if got := s.Union(applied); got != NewCapabilities(Env, Devices, Mounts) || got.Empty() {
		t.Errorf("Union: %v", got)
	}
}

// TestUpstreamMask checks the mapping to upstream's proposed capability
// mask (containerd/nri PR #265): bit value%64 of word value/64 for each
// ADJUST_* capability, and back with the baseline of older fields.
func TestUpstreamMask(t *testing.T) {
	s := NewCapabilities(Rlimits, Sysctl, MemoryPolicy, Env)
	mask := s.UpstreamMask()
	want := uint64(1<<0 | 1<<21 | 1<<25) // ADJUST_POSIX_RLIMITS, ADJUST_LINUX_SYSCTL, ADJUST_LINUX_MEMORY_POLICY
	if len(mask) != 1 || mask[0] != want {
		t.Errorf("UpstreamMask = %b, want %b", mask, want)
	}
	back := FromUpstreamMask(mask)
	for _, c := range []Capability{Rlimits, Sysctl, MemoryPolicy, Env, Mounts, Devices, Memory, UpdateCPU, Evict} {
		if !back.Has(c) {
			t.Errorf("FromUpstreamMask lacks %s", c)
		}
	}
	for _, c := range []Capability{Args, Namespaces, Pids, UpdatePids, CDIDevices} {
		if back.Has(c) {
			t.Errorf("FromUpstreamMask has %s, which the mask does not advertise", c)
		}
	}
	if u, ok := Args.Upstream(); !ok || u != UpstreamAdjustLinuxContainerArgs {
		t.Errorf("Args.Upstream() = %v, %v", u, ok)
	}
	if _, ok := Env.Upstream(); ok {
		t.Error("env has an upstream capability value")
	}
	if got := FromUpstreamMask(nil); got != UpstreamBaseline() || strings.Contains(got.String(), "args") {
		t.Errorf("empty mask: %v", got)
	}
	if (Capabilities{}).UpstreamMask() != nil {
		t.Error("the empty set has an upstream mask")
	}
}
