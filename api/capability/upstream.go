package capability

// Upstream capability advertisement (containerd/nri PR #265, "api,
// adaptation,stub: version exchange and capability advertisement", not
// merged as of containerd/nri v0.12.5) sends ConfigureRequest field 7,
// `repeated uint64 capabilities`: a bit mask of the values of its enum
// Capability, bit (value % 64) of word (value / 64). Its ADJUST_* values
// name the adjustment fields added after NRI v0.2; the fields older than
// that have no value (every runtime applies them). Its INPUT_* values and
// EXTRA_CONTAINER_STATUS say what the runtime sends plugins, which no
// grant governs.

// UpstreamCapability is a value of upstream's proposed enum Capability.
type UpstreamCapability uint32

// The ADJUST_* values of upstream's proposed enum Capability, for
// callers; the mapping from capabilities to them is the field table's
// (the "upstream=" of proto/nrikit/nri.proto).
const (
	UpstreamAdjustPOSIXRlimits          UpstreamCapability = 0  // ADJUST_POSIX_RLIMITS
	UpstreamAdjustLinuxPidLimit         UpstreamCapability = 2  // ADJUST_LINUX_PID_LIMIT
	UpstreamAdjustLinuxOOMScore         UpstreamCapability = 3  // ADJUST_LINUX_OOM_SCORE
	UpstreamAdjustCDIDevices            UpstreamCapability = 6  // ADJUST_CDI_DEVICES
	UpstreamAdjustLinuxNamespaces       UpstreamCapability = 9  // ADJUST_LINUX_NAMESPACES
	UpstreamAdjustLinuxSeccompPolicy    UpstreamCapability = 10 // ADJUST_LINUX_SECCOMP_POLICY
	UpstreamAdjustLinuxIOPriority       UpstreamCapability = 12 // ADJUST_LINUX_IO_PRIORITY
	UpstreamAdjustLinuxContainerArgs    UpstreamCapability = 14 // ADJUST_LINUX_CONTAINER_ARGS
	UpstreamAdjustLinuxSchedulingPolicy UpstreamCapability = 15 // ADJUST_LINUX_SCHEDULING_POLICY
	UpstreamAdjustLinuxNetworkDevices   UpstreamCapability = 17 // ADJUST_LINUX_NETWORK_DEVICES
	UpstreamAdjustLinuxRdtClos          UpstreamCapability = 19 // ADJUST_LINUX_RDT_CLOS
	UpstreamAdjustLinuxSysctl           UpstreamCapability = 21 // ADJUST_LINUX_SYSCTL
	UpstreamAdjustLinuxMemoryPolicy     UpstreamCapability = 25 // ADJUST_LINUX_MEMORY_POLICY
)

// upstreamOf maps the capabilities that have an upstream value to it,
// as the field table gives it. A read-only table.
var upstreamOf = func() map[Capability]UpstreamCapability {
	m := make(map[Capability]UpstreamCapability)
	for c, row := range fieldTable {
		if row.Upstream != "" && c < int(Evict) {
			m[Capability(c)] = UpstreamCapability(row.UpstreamValue)
		}
	}
	return m
}()

// UpstreamBaseline is what an upstream runtime applies without
// advertising it: the adjustment fields, updates and evictions of NRI
// v0.2 to v0.6, which have no upstream capability value.
func UpstreamBaseline() Set {
	s := All()
	for c := range upstreamOf {
		s.bits &^= 1 << c
	}
	return s
}

// Upstream returns the upstream value of c, if it has one.
func (c Capability) Upstream() (UpstreamCapability, bool) {
	u, ok := upstreamOf[c]
	return u, ok
}

// UpstreamMask returns s as upstream's capability mask (ConfigureRequest
// field 7 of PR #265): the bits of the capabilities of s that have an
// upstream value. The capabilities without one are not in it: an
// upstream plugin takes them as given.
func (s Set) UpstreamMask() []uint64 {
	var words []uint64
	for c, u := range upstreamOf {
		if !s.Has(c) {
			continue
		}
		w := int(u / 64)
		for len(words) <= w {
			words = append(words, 0)
		}
		words[w] |= 1 << (u % 64)
	}
	return words
}

// FromUpstreamMask returns the capabilities an upstream mask advertises:
// the ADJUST_* bits it has, with [UpstreamBaseline]. Bits this package
// does not know (INPUT_*, newer values) are ignored.
func FromUpstreamMask(words []uint64) Set {
	s := UpstreamBaseline()
	for c, u := range upstreamOf {
		if w := int(u / 64); w < len(words) && words[w]&(1<<(u%64)) != 0 {
			s = s.With(c)
		}
	}
	return s
}
