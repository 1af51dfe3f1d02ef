package fastdecode

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/nrikit/nrikit/api"
)

// This file holds the decoders of the records a request carries: pods,
// containers and mounts, and the map fields of pods and containers.

// decodePod decodes a PodSandbox into x (not reset: decoding a second
// occurrence of a pod into the same x merges them).
func (o UnmarshalOptions) decodePod(src []byte, x *api.PodSandbox) error {
	var cnt [11]int
	countBytesFields(src, cnt[:])
	x.Ips = slices.Grow(x.Ips, cnt[10])

	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType {
			var s *string
			switch num {
			case 1:
				s = &x.Id
			case 2:
				s = &x.Name
			case 3:
				s = &x.Uid
			case 4:
				s = &x.Namespace
			case 7:
				s = &x.RuntimeHandler
			case 5, 6:
				dst := &x.Labels
				if num == 6 {
					dst = &x.Annotations
				}
				n, err := o.consumeMapField(b, dst, cnt[num])
				if err != nil {
					return err
				}
				b = b[n:]
				continue
			case 10:
				v, n, err := o.consumeString(b)
				if err != nil {
					return err
				}
				x.Ips = append(x.Ips, v)
				b = b[n:]
				continue
			case 8:
				n, err := subMessage(o, b, &x.Linux, UnmarshalOptions.decodeLinuxPod)
				if err != nil {
					return err
				}
				b = b[n:]
				continue
			}
			if s != nil {
				v, n, err := o.consumeString(b)
				if err != nil {
					return err
				}
				*s = v
				b = b[n:]
				continue
			}
		} else if num == 9 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errDecode
			}
			x.Pid = uint32(v)
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

// decodeContainer decodes a Container into x (not reset: decoding a second
// occurrence of a container into the same x merges them).
func (o UnmarshalOptions) decodeContainer(src []byte, x *api.Container) error {
	var cnt [10]int
	countBytesFields(src, cnt[:])
	x.Args = slices.Grow(x.Args, cnt[7])
	x.Env = slices.Grow(x.Env, cnt[8])
	x.Mounts = slices.Grow(x.Mounts, cnt[9])

	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			var s *string
			switch num {
			case 1:
				s = &x.Id
			case 2:
				s = &x.PodSandboxId
			case 3:
				s = &x.Name
			case 18:
				s = &x.StatusReason
			case 19:
				s = &x.StatusMessage
			case 5, 6:
				dst := &x.Labels
				if num == 6 {
					dst = &x.Annotations
				}
				n, err := o.consumeMapField(b, dst, cnt[num])
				if err != nil {
					return err
				}
				b = b[n:]
				continue
			case 7, 8:
				v, n, err := o.consumeString(b)
				if err != nil {
					return err
				}
				if num == 7 {
					x.Args = append(x.Args, v)
				} else {
					x.Env = append(x.Env, v)
				}
				b = b[n:]
				continue
			case 9:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return errDecode
				}
				m := &api.Mount{}
				if err := o.decodeMount(v, m); err != nil {
					return err
				}
				x.Mounts = append(x.Mounts, m)
				b = b[n:]
				continue
			case 11:
				n, err := subMessage(o, b, &x.Linux, UnmarshalOptions.decodeLinuxContainer)
				if err != nil {
					return err
				}
				b = b[n:]
				continue
			}
			if s != nil {
				v, n, err := o.consumeString(b)
				if err != nil {
					return err
				}
				*s = v
				b = b[n:]
				continue
			}
		case protowire.VarintType:
			switch num {
			case 4, 12, 14, 15, 16, 17:
				v, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return errDecode
				}
				switch num {
				case 4:
					x.State = api.ContainerState(int32(v))
				case 12:
					x.Pid = uint32(v)
				case 14:
					x.CreatedAt = int64(v)
				case 15:
					x.StartedAt = int64(v)
				case 16:
					x.FinishedAt = int64(v)
				case 17:
					x.ExitCode = int32(v)
				}
				b = b[n:]
				continue
			}
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

// decodeMount decodes a Mount into x.
func (o UnmarshalOptions) decodeMount(src []byte, x *api.Mount) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= 1 && num <= 4 {
			v, n, err := o.consumeString(b)
			if err != nil {
				return err
			}
			switch num {
			case 1:
				x.Destination = v
			case 2:
				x.Type = v
			case 3:
				x.Source = v
			case 4:
				if x.Options == nil {
					// Mounts are small: a guess is cheaper than counting.
					x.Options = make([]string, 0, 4)
				}
				x.Options = append(x.Options, v)
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

// consumeMapField decodes the map<string, string> entry at the start of b
// into *m, made with room for size entries on first use, and returns the
// entry's length.
func (o UnmarshalOptions) consumeMapField(b []byte, m *map[string]string, size int) (int, error) {
	k, v, n, err := o.consumeMapEntry(b)
	if err != nil {
		return 0, err
	}
	if *m == nil {
		*m = make(map[string]string, size)
	}
	(*m)[o.str(k)] = o.str(v)
	return n, nil
}
