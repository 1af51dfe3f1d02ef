// Package fastencode hand-encodes api.PodSandbox and api.Container, the
// messages the runtime sends in bulk in Synchronize, without protobuf-go's
// reflection-driven map encoding and per-field table dispatch.
//
// The output is what proto.Marshal (MarshalOptions{}) produces: fields in
// field-number order, proto3 zero values omitted, map entries with both key
// (field 1) and value (field 2) always present, unknown fields appended at
// the end of their message, and invalid UTF-8 in any string (map keys and
// values included) reported as an error wrapping proto.Error. Map entry
// order follows Go map iteration and is therefore random, as protobuf-go's
// non-deterministic order is.
//
// The hand-encoded fields are PodSandbox 1-10; Container 1-9, 11 (see
// below), 12, 14-19; all of Mount, LinuxPodSandbox and LinuxNamespace;
// LinuxResources 6 (unified); and LinuxContainer 1, 3, 5 and 9 (sysctl)
// when it has no net_devices (with net_devices, the whole LinuxContainer
// is left to protobuf-go). Every other sub-message (Container.hooks,
// rlimits, CDI_devices, user, image; the memory, CPU, device and other
// parts of the Linux messages) is encoded by
// proto.MarshalOptions{}.MarshalAppend of the sub-message, length-prefixed,
// at its place in field-number order (with UseCachedSize where a size
// pass just sized it: AppendSizedPod, AppendSizedContainer, and inside the
// hand-encoded Linux messages, see linux.go).
package fastencode

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// Wire tags (field number << 3 | wire type), as varints.
const (
	wtVarint = uint64(protowire.VarintType)
	wtBytes  = uint64(protowire.BytesType)

	// Map entry key and value tags (fields 1 and 2, bytes).
	tagMapKey = 1<<3 | wtBytes
	tagMapVal = 2<<3 | wtBytes
)

func tagOf(num protowire.Number, typ uint64) uint64 { return uint64(num)<<3 | typ }

// invalidUTF8Error is returned for a string field holding invalid UTF-8; it
// wraps proto.Error, as protobuf-go's own marshal error does.
type invalidUTF8Error struct{ field string }

func (e *invalidUTF8Error) Error() string {
	return "fastencode: string field " + e.field + " contains invalid UTF-8"
}
func (e *invalidUTF8Error) Unwrap() error { return proto.Error }

// Field names for errors.
const (
	podMsg   = "nri.pkg.api.v1alpha1.PodSandbox."
	ctrMsg   = "nri.pkg.api.v1alpha1.Container."
	mountMsg = "nri.pkg.api.v1alpha1.Mount."
)

// sizeStr is the size of a non-repeated proto3 string field with a tag of
// tagLen bytes (0 when the string is empty).
func sizeStr(tagLen int, s string) int {
	if len(s) == 0 {
		return 0
	}
	return tagLen + protowire.SizeVarint(uint64(len(s))) + len(s)
}

// sizeStrs is the size of a repeated string field (every element, empty
// ones too).
func sizeStrs(tagLen int, ss []string) int {
	n := len(ss) * tagLen
	for _, s := range ss {
		n += protowire.SizeVarint(uint64(len(s))) + len(s)
	}
	return n
}

// sizeVarintField is the size of a non-zero varint field (0 for zero).
func sizeVarintField(tagLen int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tagLen + protowire.SizeVarint(v)
}

// entrySize is the size of the body of a map<string,string> entry.
func entrySize(k, v string) int {
	return 2 + protowire.SizeVarint(uint64(len(k))) + len(k) + protowire.SizeVarint(uint64(len(v))) + len(v)
}

// sizeMap is the size of a map<string,string> field with a one-byte tag.
func sizeMap(m map[string]string) int {
	n := 0
	for k, v := range m {
		e := entrySize(k, v)
		n += 1 + protowire.SizeVarint(uint64(e)) + e
	}
	return n
}

// sizeSub is the size of a length-prefixed sub-message field (0 if nil).
func sizeSub(tagLen int, m proto.Message, isNil bool) int {
	if isNil {
		return 0
	}
	n := proto.Size(m)
	return tagLen + protowire.SizeVarint(uint64(n)) + n
}

func appendStr(b []byte, tag uint64, s string, field string) ([]byte, error) {
	if len(s) == 0 {
		return b, nil
	}
	if !utf8.ValidString(s) {
		return b, &invalidUTF8Error{field}
	}
	b = protowire.AppendVarint(b, tag)
	b = protowire.AppendVarint(b, uint64(len(s)))
	return append(b, s...), nil
}

func appendStrs(b []byte, tag uint64, ss []string, field string) ([]byte, error) {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return b, &invalidUTF8Error{field}
		}
		b = protowire.AppendVarint(b, tag)
		b = protowire.AppendVarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

func appendVarintField(b []byte, tag, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendVarint(b, tag)
	return protowire.AppendVarint(b, v)
}

func appendMap(b []byte, tag uint64, m map[string]string, field string) ([]byte, error) {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return b, &invalidUTF8Error{field}
		}
		b = protowire.AppendVarint(b, tag)
		b = protowire.AppendVarint(b, uint64(entrySize(k, v)))
		b = append(b, byte(tagMapKey))
		b = protowire.AppendVarint(b, uint64(len(k)))
		b = append(b, k...)
		b = append(b, byte(tagMapVal))
		b = protowire.AppendVarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b, nil
}

// appendSub appends a sub-message field encoded by protobuf-go: tag, then
// MarshalAppend after a one-byte length placeholder, which is back-patched
// (moving the body when the length needs more bytes). This avoids sizing
// the sub-message separately from MarshalAppend's own size pass; with
// cached (m was just sized by proto.Size, see AppendSizedPod) there is no
// size pass at all: MarshalAppend uses the sizes proto.Size cached.
func appendSub(b []byte, tag uint64, m proto.Message, cached bool) ([]byte, error) {
	b = protowire.AppendVarint(b, tag)
	at := len(b)
	b = append(b, 0)
	b, err := proto.MarshalOptions{UseCachedSize: cached}.MarshalAppend(b, m)
	if err != nil {
		return b, err
	}
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b, nil
	}
	k := protowire.SizeVarint(uint64(n))
	for i := 1; i < k; i++ {
		b = append(b, 0)
	}
	copy(b[at+k:], b[at+1:at+1+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b, nil
}

// appendSubs appends a repeated message field encoded by protobuf-go; a nil
// element is encoded as an empty message, as protobuf-go does.
func appendSubs[M interface {
	*E
	proto.Message
}, E any](b []byte, tag uint64, ms []M, cached bool) ([]byte, error) {
	var err error
	for _, m := range ms {
		if m == nil {
			b = protowire.AppendVarint(b, tag)
			b = append(b, 0)
			continue
		}
		if b, err = appendSub(b, tag, m, cached); err != nil {
			return b, err
		}
	}
	return b, nil
}

func sizeSubs[M interface {
	*E
	proto.Message
}, E any](tagLen int, ms []M) int {
	n := 0
	for _, m := range ms {
		s := 0
		if m != nil {
			s = proto.Size(m)
		}
		n += tagLen + protowire.SizeVarint(uint64(s)) + s
	}
	return n
}

// SizePod returns the size of p's encoding: exactly the number of bytes
// AppendPod appends (for a p that AppendPod encodes without error). A nil p
// has size 0.
func SizePod(p *api.PodSandbox) int {
	if p == nil {
		return 0
	}
	n := sizeStr(1, p.Id) + sizeStr(1, p.Name) + sizeStr(1, p.Uid) + sizeStr(1, p.Namespace)
	n += sizeMap(p.Labels) + sizeMap(p.Annotations)
	n += sizeStr(1, p.RuntimeHandler)
	n += sizeLinuxPod(p.Linux, false)
	n += sizeVarintField(1, uint64(p.Pid))
	n += sizeStrs(1, p.Ips)
	return n + len(p.ProtoReflect().GetUnknown())
}

// AppendPod appends the encoding of p (as proto.Marshal would produce it,
// map order aside) to b. On error (invalid UTF-8 in a string, or an error
// from protobuf-go marshaling PodSandbox.linux) it returns b with its
// original length and the error. A nil p appends nothing.
func AppendPod(b []byte, p *api.PodSandbox) ([]byte, error) {
	return appendPodChecked(b, p, false)
}

// AppendSizedPod is AppendPod for a p that SizePod has just sized and
// that has not changed since: the sub-messages protobuf-go encodes reuse
// the sizes SizePod had it compute (proto.MarshalOptions.UseCachedSize)
// instead of sizing them again, which saves a pass over them (and the
// allocations of protobuf-go's map iteration). If p changed after
// SizePod, the encoding is wrong.
func AppendSizedPod(b []byte, p *api.PodSandbox) ([]byte, error) {
	return appendPodChecked(b, p, true)
}

// appendPodChecked is AppendPod, with cached sizes if cached.
func appendPodChecked(b []byte, p *api.PodSandbox, cached bool) ([]byte, error) {
	if p == nil {
		return b, nil
	}
	out, err := appendPod(b, p, cached)
	if err != nil {
		// b[:len(b)] is untouched even if out was reallocated (or is nil,
		// as MarshalAppend may return on error).
		return b, err
	}
	return out, nil
}

func appendPod(b []byte, p *api.PodSandbox, cached bool) (_ []byte, err error) {
	if b, err = appendStr(b, tagOf(1, wtBytes), p.Id, podMsg+"id"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(2, wtBytes), p.Name, podMsg+"name"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(3, wtBytes), p.Uid, podMsg+"uid"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(4, wtBytes), p.Namespace, podMsg+"namespace"); err != nil {
		return b, err
	}
	if b, err = appendMap(b, tagOf(5, wtBytes), p.Labels, podMsg+"labels"); err != nil {
		return b, err
	}
	if b, err = appendMap(b, tagOf(6, wtBytes), p.Annotations, podMsg+"annotations"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(7, wtBytes), p.RuntimeHandler, podMsg+"runtime_handler"); err != nil {
		return b, err
	}
	if p.Linux != nil {
		if b, err = appendLinuxPod(b, tagOf(8, wtBytes), p.Linux, cached); err != nil {
			return b, err
		}
	}
	b = appendVarintField(b, tagOf(9, wtVarint), uint64(p.Pid))
	if b, err = appendStrs(b, tagOf(10, wtBytes), p.Ips, podMsg+"ips"); err != nil {
		return b, err
	}
	return append(b, p.ProtoReflect().GetUnknown()...), nil
}

// mountSize is the size of a Mount's body (0 for nil).
func mountSize(m *api.Mount) int {
	if m == nil {
		return 0
	}
	n := sizeStr(1, m.Destination) + sizeStr(1, m.Type) + sizeStr(1, m.Source) + sizeStrs(1, m.Options)
	return n + len(m.ProtoReflect().GetUnknown())
}

func sizeMounts(ms []*api.Mount) int {
	n := 0
	for _, m := range ms {
		s := mountSize(m)
		n += 1 + protowire.SizeVarint(uint64(s)) + s
	}
	return n
}

// appendMounts hand-encodes Container.mounts; a nil element is encoded as
// an empty Mount, as protobuf-go does.
func appendMounts(b []byte, ms []*api.Mount) (_ []byte, err error) {
	for _, m := range ms {
		b = append(b, byte(tagOf(9, wtBytes)))
		if m == nil {
			b = append(b, 0)
			continue
		}
		b = protowire.AppendVarint(b, uint64(mountSize(m)))
		if b, err = appendStr(b, tagOf(1, wtBytes), m.Destination, mountMsg+"destination"); err != nil {
			return b, err
		}
		if b, err = appendStr(b, tagOf(2, wtBytes), m.Type, mountMsg+"type"); err != nil {
			return b, err
		}
		if b, err = appendStr(b, tagOf(3, wtBytes), m.Source, mountMsg+"source"); err != nil {
			return b, err
		}
		if b, err = appendStrs(b, tagOf(4, wtBytes), m.Options, mountMsg+"options"); err != nil {
			return b, err
		}
		b = append(b, m.ProtoReflect().GetUnknown()...)
	}
	return b, nil
}

// SizeContainer returns the size of c's encoding: exactly the number of
// bytes AppendContainer appends (for a c that AppendContainer encodes
// without error). A nil c has size 0.
func SizeContainer(c *api.Container) int {
	if c == nil {
		return 0
	}
	n := sizeStr(1, c.Id) + sizeStr(1, c.PodSandboxId) + sizeStr(1, c.Name)
	n += sizeVarintField(1, uint64(int64(c.State)))
	n += sizeMap(c.Labels) + sizeMap(c.Annotations)
	n += sizeStrs(1, c.Args) + sizeStrs(1, c.Env)
	n += sizeMounts(c.Mounts)
	n += sizeSub(1, c.Hooks, c.Hooks == nil)
	n += sizeLinuxCtr(c.Linux, false)
	n += sizeVarintField(1, uint64(c.Pid))
	n += sizeSubs(1, c.Rlimits)
	n += sizeVarintField(1, uint64(c.CreatedAt))
	n += sizeVarintField(1, uint64(c.StartedAt))
	n += sizeVarintField(2, uint64(c.FinishedAt))
	n += sizeVarintField(2, uint64(int64(c.ExitCode)))
	n += sizeStr(2, c.StatusReason) + sizeStr(2, c.StatusMessage)
	n += sizeSubs(2, c.CDIDevices)
	n += sizeSub(2, c.User, c.User == nil)
	n += sizeSub(2, c.Image, c.Image == nil)
	return n + len(c.ProtoReflect().GetUnknown())
}

// AppendContainer appends the encoding of c (as proto.Marshal would
// produce it, map order aside) to b. On error (invalid UTF-8 in a string,
// or an error from protobuf-go marshaling a delegated sub-message) it
// returns b with its original length and the error. A nil c appends
// nothing.
func AppendContainer(b []byte, c *api.Container) ([]byte, error) {
	return appendContainerChecked(b, c, false)
}

// AppendSizedContainer is AppendContainer for a c that SizeContainer has
// just sized and that has not changed since (see AppendSizedPod).
func AppendSizedContainer(b []byte, c *api.Container) ([]byte, error) {
	return appendContainerChecked(b, c, true)
}

// appendContainerChecked is AppendContainer, with cached sizes if cached.
func appendContainerChecked(b []byte, c *api.Container, cached bool) ([]byte, error) {
	if c == nil {
		return b, nil
	}
	out, err := appendContainer(b, c, cached)
	if err != nil {
		// b[:len(b)] is untouched even if out was reallocated (or is nil,
		// as MarshalAppend may return on error).
		return b, err
	}
	return out, nil
}

func appendContainer(b []byte, c *api.Container, cached bool) (_ []byte, err error) {
	if b, err = appendStr(b, tagOf(1, wtBytes), c.Id, ctrMsg+"id"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(2, wtBytes), c.PodSandboxId, ctrMsg+"pod_sandbox_id"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(3, wtBytes), c.Name, ctrMsg+"name"); err != nil {
		return b, err
	}
	b = appendVarintField(b, tagOf(4, wtVarint), uint64(int64(c.State)))
	if b, err = appendMap(b, tagOf(5, wtBytes), c.Labels, ctrMsg+"labels"); err != nil {
		return b, err
	}
	if b, err = appendMap(b, tagOf(6, wtBytes), c.Annotations, ctrMsg+"annotations"); err != nil {
		return b, err
	}
	if b, err = appendStrs(b, tagOf(7, wtBytes), c.Args, ctrMsg+"args"); err != nil {
		return b, err
	}
	if b, err = appendStrs(b, tagOf(8, wtBytes), c.Env, ctrMsg+"env"); err != nil {
		return b, err
	}
	if b, err = appendMounts(b, c.Mounts); err != nil {
		return b, err
	}
	if c.Hooks != nil {
		if b, err = appendSub(b, tagOf(10, wtBytes), c.Hooks, cached); err != nil {
			return b, err
		}
	}
	if c.Linux != nil {
		if b, err = appendLinuxCtr(b, tagOf(11, wtBytes), c.Linux, cached); err != nil {
			return b, err
		}
	}
	b = appendVarintField(b, tagOf(12, wtVarint), uint64(c.Pid))
	if b, err = appendSubs(b, tagOf(13, wtBytes), c.Rlimits, cached); err != nil {
		return b, err
	}
	b = appendVarintField(b, tagOf(14, wtVarint), uint64(c.CreatedAt))
	b = appendVarintField(b, tagOf(15, wtVarint), uint64(c.StartedAt))
	b = appendVarintField(b, tagOf(16, wtVarint), uint64(c.FinishedAt))
	b = appendVarintField(b, tagOf(17, wtVarint), uint64(int64(c.ExitCode)))
	if b, err = appendStr(b, tagOf(18, wtBytes), c.StatusReason, ctrMsg+"status_reason"); err != nil {
		return b, err
	}
	if b, err = appendStr(b, tagOf(19, wtBytes), c.StatusMessage, ctrMsg+"status_message"); err != nil {
		return b, err
	}
	if b, err = appendSubs(b, tagOf(20, wtBytes), c.CDIDevices, cached); err != nil {
		return b, err
	}
	if c.User != nil {
		if b, err = appendSub(b, tagOf(21, wtBytes), c.User, cached); err != nil {
			return b, err
		}
	}
	if c.Image != nil {
		if b, err = appendSub(b, tagOf(22, wtBytes), c.Image, cached); err != nil {
			return b, err
		}
	}
	return append(b, c.ProtoReflect().GetUnknown()...), nil
}
