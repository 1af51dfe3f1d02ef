package fastdecode

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// This file holds the decoders of the linux subtrees of pods and
// containers: the fields every kubelet-created pod and container carries
// (namespaces, cgroup paths, CPU, memory and pids resources, the unified
// map, sysctls, the OOM score). Other fields of these messages (devices,
// seccomp, hugepages, RDT, ...) go to protobuf-go through the fallback, as
// everywhere in this package.

// subMessage decodes the length-delimited message at the start of b into
// *dst, made if nil (a second occurrence merges into the first, as in
// protobuf-go), and returns its length.
func subMessage[M any](o UnmarshalOptions, b []byte, dst **M, decode func(UnmarshalOptions, []byte, *M) error) (int, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, errDecode
	}
	if *dst == nil {
		*dst = new(M)
	}
	return n, decode(o, v, *dst)
}

// appendMessage decodes the length-delimited message at the start of b into
// a new element of *dst and returns its length.
func appendMessage[M any](o UnmarshalOptions, b []byte, dst *[]*M, decode func(UnmarshalOptions, []byte, *M) error) (int, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, errDecode
	}
	m := new(M)
	if err := decode(o, v, m); err != nil {
		return 0, err
	}
	*dst = append(*dst, m)
	return n, nil
}

// decodeLinuxPod decodes a LinuxPodSandbox into x (not reset).
func (o UnmarshalOptions) decodeLinuxPod(src []byte, x *api.LinuxPodSandbox) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 6 {
			var err error
			switch num {
			case 1:
				n, err = subMessage(o, b, &x.PodOverhead, UnmarshalOptions.decodeResources)
			case 2:
				n, err = subMessage(o, b, &x.PodResources, UnmarshalOptions.decodeResources)
			case 3:
				x.CgroupParent, n, err = o.consumeString(b)
			case 4:
				x.CgroupsPath, n, err = o.consumeString(b)
			case 5:
				n, err = appendMessage(o, b, &x.Namespaces, UnmarshalOptions.decodeNamespace)
			case 6:
				n, err = subMessage(o, b, &x.Resources, UnmarshalOptions.decodeResources)
			}
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeLinuxContainer decodes a LinuxContainer into x (not reset).
func (o UnmarshalOptions) decodeLinuxContainer(src []byte, x *api.LinuxContainer) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || (num >= 3 && num <= 5) || num == 9) {
			var err error
			switch num {
			case 1:
				n, err = appendMessage(o, b, &x.Namespaces, UnmarshalOptions.decodeNamespace)
			case 3:
				n, err = subMessage(o, b, &x.Resources, UnmarshalOptions.decodeResources)
			case 4:
				n, err = subMessage(o, b, &x.OomScoreAdj, decodeOptionalInt)
			case 5:
				x.CgroupsPath, n, err = o.consumeString(b)
			case 9:
				n, err = o.consumeMapField(b, &x.Sysctl, 0)
			}
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeNamespace decodes a LinuxNamespace into x (not reset).
func (o UnmarshalOptions) decodeNamespace(src []byte, x *api.LinuxNamespace) error {
	return o.decodeStrings(src, x, &x.Type, &x.Path)
}

// decodeStrings decodes a message whose fields 1 and 2 are the strings
// *s1 and *s2 into x (not reset).
func (o UnmarshalOptions) decodeStrings(src []byte, x proto.Message, s1, s2 *string) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			dst := s1
			if num == 2 {
				dst = s2
			}
			v, n, err := o.consumeString(b)
			if err != nil {
				return err
			}
			*dst = v
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeResources decodes a LinuxResources into x (not reset).
func (o UnmarshalOptions) decodeResources(src []byte, x *api.LinuxResources) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2 || num == 6 || num == 8) {
			var err error
			switch num {
			case 1:
				n, err = subMessage(o, b, &x.Memory, UnmarshalOptions.decodeMemory)
			case 2:
				n, err = subMessage(o, b, &x.Cpu, UnmarshalOptions.decodeCPU)
			case 6:
				n, err = o.consumeMapField(b, &x.Unified, 0)
			case 8:
				n, err = subMessage(o, b, &x.Pids, decodePids)
			}
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeMemory decodes a LinuxMemory into x (not reset).
func (o UnmarshalOptions) decodeMemory(src []byte, x *api.LinuxMemory) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 8 {
			var err error
			switch num {
			case 1:
				n, err = subMessage(o, b, &x.Limit, decodeOptionalInt64)
			case 2:
				n, err = subMessage(o, b, &x.Reservation, decodeOptionalInt64)
			case 3:
				n, err = subMessage(o, b, &x.Swap, decodeOptionalInt64)
			case 4:
				n, err = subMessage(o, b, &x.Kernel, decodeOptionalInt64)
			case 5:
				n, err = subMessage(o, b, &x.KernelTcp, decodeOptionalInt64)
			case 6:
				n, err = subMessage(o, b, &x.Swappiness, decodeOptionalUInt64)
			case 7:
				n, err = subMessage(o, b, &x.DisableOomKiller, decodeOptionalBool)
			case 8:
				n, err = subMessage(o, b, &x.UseHierarchy, decodeOptionalBool)
			}
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeCPU decodes a LinuxCPU into x (not reset).
func (o UnmarshalOptions) decodeCPU(src []byte, x *api.LinuxCPU) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 7 {
			var err error
			switch num {
			case 1:
				n, err = subMessage(o, b, &x.Shares, decodeOptionalUInt64)
			case 2:
				n, err = subMessage(o, b, &x.Quota, decodeOptionalInt64)
			case 3:
				n, err = subMessage(o, b, &x.Period, decodeOptionalUInt64)
			case 4:
				n, err = subMessage(o, b, &x.RealtimeRuntime, decodeOptionalInt64)
			case 5:
				n, err = subMessage(o, b, &x.RealtimePeriod, decodeOptionalUInt64)
			case 6:
				x.Cpus, n, err = o.consumeString(b)
			case 7:
				x.Mems, n, err = o.consumeString(b)
			}
			if err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// decodeVarint1 decodes a message whose field 1 is a varint into x (not
// reset), calling set with each value of field 1 (the last one wins).
func decodeVarint1[M proto.Message](src []byte, x M, set func(M, uint64)) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errDecode
			}
			set(x, v)
			b = b[n:]
			continue
		}
		n, err := skipField(num, typ, b)
		if err != nil {
			return err
		}
		b = b[n:]
		fb.add(src, start, len(src)-len(b))
	}
	return fb.apply(src, x)
}

// The messages with one varint field 1, with protobuf-go's conversions of
// the varint.

func decodePids(_ UnmarshalOptions, src []byte, x *api.LinuxPids) error {
	return decodeVarint1(src, x, func(x *api.LinuxPids, v uint64) { x.Limit = int64(v) })
}

func decodeOptionalInt(_ UnmarshalOptions, src []byte, x *api.OptionalInt) error {
	return decodeVarint1(src, x, func(x *api.OptionalInt, v uint64) { x.Value = int64(v) })
}

func decodeOptionalInt64(_ UnmarshalOptions, src []byte, x *api.OptionalInt64) error {
	return decodeVarint1(src, x, func(x *api.OptionalInt64, v uint64) { x.Value = int64(v) })
}

func decodeOptionalUInt64(_ UnmarshalOptions, src []byte, x *api.OptionalUInt64) error {
	return decodeVarint1(src, x, func(x *api.OptionalUInt64, v uint64) { x.Value = v })
}

func decodeOptionalBool(_ UnmarshalOptions, src []byte, x *api.OptionalBool) error {
	return decodeVarint1(src, x, func(x *api.OptionalBool, v uint64) { x.Value = v != 0 })
}
