package fastencode

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// The Linux parts of pods and containers: LinuxPodSandbox, LinuxResources
// and LinuxNamespace are encoded by hand, and so is LinuxContainer unless
// it has net_devices (a map of messages, left to protobuf-go with the
// whole LinuxContainer). Their other sub-messages (memory, CPU, devices,
// ...) are encoded by protobuf-go, sized once: the size pass of the
// enclosing hand-encoded message sizes them, and appending them reuses
// those sizes. Going by hand here is what keeps protobuf-go's reflective
// iteration, which allocates per entry, off the resources' unified map
// and the sysctl map.

// Field names for errors.
const (
	linuxPodMsg   = "nri.pkg.api.v1alpha1.LinuxPodSandbox."
	linuxCtrMsg   = "nri.pkg.api.v1alpha1.LinuxContainer."
	resourcesMsg  = "nri.pkg.api.v1alpha1.LinuxResources."
	namespaceMsg  = "nri.pkg.api.v1alpha1.LinuxNamespace."
	sysctlField   = linuxCtrMsg + "sysctl"
	unifiedField  = resourcesMsg + "unified"
	cgroupsField  = "cgroups_path"
	cgroupParentF = linuxPodMsg + "cgroup_parent"
)

// lenField is the size of a length-prefixed field with a tag of tagLen
// bytes and n bytes of data.
func lenField(tagLen, n int) int { return tagLen + protowire.SizeVarint(uint64(n)) + n }

// leafSize is the size of m's encoding by protobuf-go; with cached, the
// size protobuf-go cached when m was last sized (m unchanged since).
func leafSize(m proto.Message, cached bool) int {
	return proto.MarshalOptions{UseCachedSize: cached}.Size(m)
}

// sizeLeaf is the size of a sub-message field encoded by protobuf-go (0
// if nil).
func sizeLeaf(tagLen int, m proto.Message, isNil, cached bool) int {
	if isNil {
		return 0
	}
	return lenField(tagLen, leafSize(m, cached))
}

// sizeLeaves is the size of a repeated sub-message field encoded by
// protobuf-go (a nil element is an empty message).
func sizeLeaves[M interface {
	*E
	proto.Message
}, E any](tagLen int, ms []M, cached bool) int {
	n := 0
	for _, m := range ms {
		s := 0
		if m != nil {
			s = leafSize(m, cached)
		}
		n += lenField(tagLen, s)
	}
	return n
}

// resourcesSize is the size of r's body.
func resourcesSize(r *api.LinuxResources, cached bool) int {
	n := sizeLeaf(1, r.Memory, r.Memory == nil, cached) + sizeLeaf(1, r.Cpu, r.Cpu == nil, cached)
	n += sizeLeaves(1, r.HugepageLimits, cached)
	n += sizeLeaf(1, r.BlockioClass, r.BlockioClass == nil, cached)
	n += sizeLeaf(1, r.RdtClass, r.RdtClass == nil, cached)
	n += sizeMap(r.Unified)
	n += sizeLeaves(1, r.Devices, cached)
	n += sizeLeaf(1, r.Pids, r.Pids == nil, cached)
	return n + len(r.ProtoReflect().GetUnknown())
}

// sizeResources is the size of a LinuxResources field (0 if nil).
func sizeResources(tagLen int, r *api.LinuxResources, cached bool) int {
	if r == nil {
		return 0
	}
	return lenField(tagLen, resourcesSize(r, cached))
}

// appendResources appends r (not nil) as field tag. Its leaves are
// appended with the sizes its size pass cached.
func appendResources(b []byte, tag uint64, r *api.LinuxResources, cached bool) (_ []byte, err error) {
	b = protowire.AppendVarint(b, tag)
	b = protowire.AppendVarint(b, uint64(resourcesSize(r, cached)))
	if r.Memory != nil {
		if b, err = appendSub(b, tagOf(1, wtBytes), r.Memory, true); err != nil {
			return b, err
		}
	}
	if r.Cpu != nil {
		if b, err = appendSub(b, tagOf(2, wtBytes), r.Cpu, true); err != nil {
			return b, err
		}
	}
	if b, err = appendSubs(b, tagOf(3, wtBytes), r.HugepageLimits, true); err != nil {
		return b, err
	}
	if r.BlockioClass != nil {
		if b, err = appendSub(b, tagOf(4, wtBytes), r.BlockioClass, true); err != nil {
			return b, err
		}
	}
	if r.RdtClass != nil {
		if b, err = appendSub(b, tagOf(5, wtBytes), r.RdtClass, true); err != nil {
			return b, err
		}
	}
	if b, err = appendMap(b, tagOf(6, wtBytes), r.Unified, unifiedField); err != nil {
		return b, err
	}
	if b, err = appendSubs(b, tagOf(7, wtBytes), r.Devices, true); err != nil {
		return b, err
	}
	if r.Pids != nil {
		if b, err = appendSub(b, tagOf(8, wtBytes), r.Pids, true); err != nil {
			return b, err
		}
	}
	return append(b, r.ProtoReflect().GetUnknown()...), nil
}

// namespaceSize is the size of a LinuxNamespace's body (0 for nil).
func namespaceSize(ns *api.LinuxNamespace) int {
	if ns == nil {
		return 0
	}
	return sizeStr(1, ns.Type) + sizeStr(1, ns.Path) + len(ns.ProtoReflect().GetUnknown())
}

func sizeNamespaces(nss []*api.LinuxNamespace) int {
	n := 0
	for _, ns := range nss {
		n += lenField(1, namespaceSize(ns))
	}
	return n
}

// appendNamespaces appends a repeated LinuxNamespace field; a nil
// element is an empty message, as protobuf-go encodes it.
func appendNamespaces(b []byte, tag uint64, nss []*api.LinuxNamespace) (_ []byte, err error) {
	for _, ns := range nss {
		b = protowire.AppendVarint(b, tag)
		b = protowire.AppendVarint(b, uint64(namespaceSize(ns)))
		if ns == nil {
			continue
		}
		if b, err = appendStr(b, tagOf(1, wtBytes), ns.Type, namespaceMsg+"type"); err != nil {
			return b, err
		}
		if b, err = appendStr(b, tagOf(2, wtBytes), ns.Path, namespaceMsg+"path"); err != nil {
			return b, err
		}
		b = append(b, ns.ProtoReflect().GetUnknown()...)
	}
	return b, nil
}

// linuxPodSize is the size of l's body.
func linuxPodSize(l *api.LinuxPodSandbox, cached bool) int {
	n := sizeResources(1, l.PodOverhead, cached) + sizeResources(1, l.PodResources, cached)
	n += sizeStr(1, l.CgroupParent) + sizeStr(1, l.CgroupsPath)
	n += sizeNamespaces(l.Namespaces)
	n += sizeResources(1, l.Resources, cached)
	return n + len(l.ProtoReflect().GetUnknown())
}

// sizeLinuxPod is the size of PodSandbox.linux (0 if nil).
func sizeLinuxPod(l *api.LinuxPodSandbox, cached bool) int {
	if l == nil {
		return 0
	}
	return lenField(1, linuxPodSize(l, cached))
}

// appendLinuxPod appends l (not nil) as field tag.
func appendLinuxPod(b []byte, tag uint64, l *api.LinuxPodSandbox, cached bool) (_ []byte, err error) {
	b = protowire.AppendVarint(b, tag)
	b = protowire.AppendVarint(b, uint64(linuxPodSize(l, cached)))
	// The size pass above sized the leaves: from here on their cached
	// sizes are current.
	if l.PodOverhead != nil {
		if b, err = appendResources(b, tagOf(1, wtBytes), l.PodOverhead, true); err != nil {
			return b, err
		}
	}
	if l.PodResources != nil {
		if b, err = appendResources(b, tagOf(2, wtBytes), l.PodResources, true); err != nil {
			return b, err
		}
	}
	if b, err = appendStr(b, tagOf(3, wtBytes), l.CgroupParent, cgroupParentF); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(4, wtBytes), l.CgroupsPath, linuxPodMsg+cgroupsField); err != nil {
		return b, err
	}
	if b, err = appendNamespaces(b, tagOf(5, wtBytes), l.Namespaces); err != nil {
		return b, err
	}
	if l.Resources != nil {
		if b, err = appendResources(b, tagOf(6, wtBytes), l.Resources, true); err != nil {
			return b, err
		}
	}
	return append(b, l.ProtoReflect().GetUnknown()...), nil
}

// byHand reports whether l is encoded by hand (see above).
func byHand(l *api.LinuxContainer) bool { return len(l.NetDevices) == 0 }

// linuxCtrSize is the size of the body of l (encoded by hand).
func linuxCtrSize(l *api.LinuxContainer, cached bool) int {
	n := sizeNamespaces(l.Namespaces)
	n += sizeLeaves(1, l.Devices, cached)
	n += sizeResources(1, l.Resources, cached)
	n += sizeLeaf(1, l.OomScoreAdj, l.OomScoreAdj == nil, cached)
	n += sizeStr(1, l.CgroupsPath)
	n += sizeLeaf(1, l.IoPriority, l.IoPriority == nil, cached)
	n += sizeLeaf(1, l.SeccompProfile, l.SeccompProfile == nil, cached)
	n += sizeLeaf(1, l.SeccompPolicy, l.SeccompPolicy == nil, cached)
	n += sizeMap(l.Sysctl)
	n += sizeLeaf(1, l.Scheduler, l.Scheduler == nil, cached)
	n += sizeLeaf(1, l.Rdt, l.Rdt == nil, cached)
	return n + len(l.ProtoReflect().GetUnknown())
}

// sizeLinuxCtr is the size of Container.linux (0 if nil).
func sizeLinuxCtr(l *api.LinuxContainer, cached bool) int {
	switch {
	case l == nil:
		return 0
	case !byHand(l):
		return sizeLeaf(1, l, false, cached)
	}
	return lenField(1, linuxCtrSize(l, cached))
}

// appendLinuxCtr appends l (not nil) as field tag.
func appendLinuxCtr(b []byte, tag uint64, l *api.LinuxContainer, cached bool) (_ []byte, err error) {
	if !byHand(l) {
		return appendSub(b, tag, l, cached)
	}
	b = protowire.AppendVarint(b, tag)
	b = protowire.AppendVarint(b, uint64(linuxCtrSize(l, cached)))
	// The leaves are sized: their cached sizes are current.
	if b, err = appendNamespaces(b, tagOf(1, wtBytes), l.Namespaces); err != nil {
		return b, err
	}
	if b, err = appendSubs(b, tagOf(2, wtBytes), l.Devices, true); err != nil {
		return b, err
	}
	if l.Resources != nil {
		if b, err = appendResources(b, tagOf(3, wtBytes), l.Resources, true); err != nil {
			return b, err
		}
	}
	if l.OomScoreAdj != nil {
		if b, err = appendSub(b, tagOf(4, wtBytes), l.OomScoreAdj, true); err != nil {
			return b, err
		}
	}
	if b, err = appendStr(b, tagOf(5, wtBytes), l.CgroupsPath, linuxCtrMsg+cgroupsField); err != nil {
		return b, err
	}
	if l.IoPriority != nil {
		if b, err = appendSub(b, tagOf(6, wtBytes), l.IoPriority, true); err != nil {
			return b, err
		}
	}
	if l.SeccompProfile != nil {
		if b, err = appendSub(b, tagOf(7, wtBytes), l.SeccompProfile, true); err != nil {
			return b, err
		}
	}
	if l.SeccompPolicy != nil {
		if b, err = appendSub(b, tagOf(8, wtBytes), l.SeccompPolicy, true); err != nil {
			return b, err
		}
	}
	if b, err = appendMap(b, tagOf(9, wtBytes), l.Sysctl, sysctlField); err != nil {
		return b, err
	}
	if l.Scheduler != nil {
		if b, err = appendSub(b, tagOf(11, wtBytes), l.Scheduler, true); err != nil {
			return b, err
		}
	}
	if l.Rdt != nil {
		if b, err = appendSub(b, tagOf(12, wtBytes), l.Rdt, true); err != nil {
			return b, err
		}
	}
	return append(b, l.ProtoReflect().GetUnknown()...), nil
}
