// Package fastdecode decodes the NRI messages that carry pods and containers
// faster than protobuf-go's generic decoder, with identical results.
//
// Profiles of plugin processes show that proto.Unmarshal of pods and
// containers (map<string,string> fields decoded through reflection, plus
// per-field table dispatch) dominates a plugin's CPU per event and the time
// to receive a large Synchronize. Unmarshal decodes the hot fields of
// PodSandbox, Container and Mount by hand with protowire and hands every
// other field to protobuf-go.
//
// Contract: Unmarshal(b, m) leaves m exactly as proto.Unmarshal(b, m) would
// (proto.Equal, unknown fields included) and fails whenever proto.Unmarshal
// fails (the error text may differ; errors wrap proto.Error); so does
// UnmarshalOptions{}.Unmarshal, and with TrustUTF8 the hand-decoded strings
// are not checked for UTF-8. Each field
// number of a hand-decoded message is routed to exactly one path: the
// fields listed below, when they have their declared wire type, are decoded
// by hand with protobuf-go's semantics (last scalar wins, repeated fields
// append, map entries with missing key or value default to "", later
// duplicate keys win, proto3 strings must be valid UTF-8, open enums keep
// unknown numbers); every other field (sub-messages such as linux or hooks,
// unknown field numbers, known numbers with an unexpected wire type) is
// copied raw, tag included, into a per-message buffer that is merged into
// the message at the end with proto.UnmarshalOptions{Merge: true}. Decoded
// strings are copies: nothing in m aliases b, which the caller may reuse
// (unless UnmarshalOptions.OwnedInput says b is the decoder's to keep).
//
// Hand-decoded fields:
//   - PodSandbox: id, name, uid, namespace, labels, annotations,
//     runtime_handler, pid, ips;
//   - Container: id, pod_sandbox_id, name, state, labels, annotations, args,
//     env, mounts, pid, created_at, started_at, finished_at, exit_code,
//     status_reason, status_message;
//   - Mount: destination, type, source, options;
//   - PodSandbox.linux (LinuxPodSandbox): pod_overhead, pod_resources,
//     cgroup_parent, cgroups_path, namespaces, resources; Container.linux
//     (LinuxContainer): namespaces, resources, oom_score_adj, cgroups_path,
//     sysctl; LinuxNamespace: type, path; LinuxResources: memory, cpu,
//     unified, pids; all fields of LinuxMemory, LinuxCPU, LinuxPids and the
//     Optional wrappers they use;
//   - SynchronizeRequest: pods, containers, more;
//   - the event requests listed at Unmarshal: pod (1) and, where the request
//     has one, container (2). A pod or container occurring twice is merged
//     into the same message, as protobuf-go does.
package fastdecode

import (
	"reflect"
	"slices"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// Unmarshal decodes b into m exactly as proto.Unmarshal(b, m) would (m is reset first),
// faster for the message types listed below; for any other type it calls proto.Unmarshal.
//
// Types with a fast path: *api.SynchronizeRequest, *api.PodSandbox,
// *api.Container, *api.RunPodSandboxRequest, *api.StopPodSandboxRequest,
// *api.RemovePodSandboxRequest, *api.PostUpdatePodSandboxRequest,
// *api.CreateContainerRequest, *api.PostCreateContainerRequest,
// *api.StartContainerRequest, *api.PostStartContainerRequest,
// *api.StopContainerRequest, *api.RemoveContainerRequest,
// *api.PostUpdateContainerRequest, *api.LinuxPodSandbox,
// *api.LinuxContainer and *api.LinuxResources. A nil pointer of any of these types is
// passed to proto.Unmarshal as well. b is not retained.
func Unmarshal(b []byte, m proto.Message) error {
	return UnmarshalOptions{}.Unmarshal(b, m)
}

// UnmarshalOptions configures the decoding of [UnmarshalOptions.Unmarshal].
// The zero value decodes as [Unmarshal].
type UnmarshalOptions struct {
	// TrustUTF8 leaves out the UTF-8 check of the strings decoded by hand
	// (ids, names, labels, annotations, args, env, mounts): they are
	// copied as they are, where proto.Unmarshal fails on invalid UTF-8.
	// It is for input from an encoder known to check (protobuf-go checks
	// when it marshals) in a place where the check is expensive: a
	// WebAssembly guest, where every loop iteration is a check of the
	// host's termination flag. Fields decoded by protobuf-go (see the
	// package comment) are still checked. With valid input the result is
	// the same.
	TrustUTF8 bool

	// OwnedInput says the bytes to decode are the decoder's to keep: no
	// one writes to them again, ever (a capture of ttrpc's payload, see
	// NewCapture; a WebAssembly guest's request buffer, which the host
	// frees and never touches again). The hand-decoded strings then point
	// into them rather than being copied: one allocation per string
	// fewer. A string kept from the result keeps all of the bytes alive.
	OwnedInput bool
}

// Unmarshal decodes b into m as the package-level [Unmarshal] does, with
// the options o.
func (o UnmarshalOptions) Unmarshal(b []byte, m proto.Message) error {
	if ok, err := o.fastPath(m, b, true); ok {
		return err
	}
	return proto.Unmarshal(b, m)
}

// fastPath reports whether m's type (non-nil) has a fast path and, with
// decode, runs it on b, resetting m first. fastPaths is the one list of the
// supported types (see Supports).
func (o UnmarshalOptions) fastPath(m proto.Message, b []byte, decode bool) (bool, error) {
	dec, ok := fastPaths[reflect.TypeOf(m)]
	if !ok || reflect.ValueOf(m).IsNil() {
		return false, nil
	}
	if !decode {
		return true, nil
	}
	proto.Reset(m)
	return true, dec(o, b, m)
}

// decoder decodes b into a reset message of the type it is listed for.
type decoder func(o UnmarshalOptions, b []byte, m proto.Message) error

// fastPaths maps each type with a fast path to its decoder. It is never
// written to.
var fastPaths = map[reflect.Type]decoder{
	reflect.TypeFor[*api.SynchronizeRequest](): whole(UnmarshalOptions.decodeSynchronize),
	reflect.TypeFor[*api.PodSandbox]():         whole(UnmarshalOptions.decodePod),
	reflect.TypeFor[*api.Container]():          whole(UnmarshalOptions.decodeContainer),
	// The linux subtrees, as decoded inside pods and containers.
	reflect.TypeFor[*api.LinuxPodSandbox](): whole(UnmarshalOptions.decodeLinuxPod),
	reflect.TypeFor[*api.LinuxContainer]():  whole(UnmarshalOptions.decodeLinuxContainer),
	reflect.TypeFor[*api.LinuxResources]():  whole(UnmarshalOptions.decodeResources),
	// Pod events: the pod is field 1.
	reflect.TypeFor[*api.RunPodSandboxRequest]():        event(func(x *api.RunPodSandboxRequest) (podField, ctrField) { return &x.Pod, nil }),
	reflect.TypeFor[*api.StopPodSandboxRequest]():       event(func(x *api.StopPodSandboxRequest) (podField, ctrField) { return &x.Pod, nil }),
	reflect.TypeFor[*api.RemovePodSandboxRequest]():     event(func(x *api.RemovePodSandboxRequest) (podField, ctrField) { return &x.Pod, nil }),
	reflect.TypeFor[*api.PostUpdatePodSandboxRequest](): event(func(x *api.PostUpdatePodSandboxRequest) (podField, ctrField) { return &x.Pod, nil }),
	// Container events: the pod is field 1, the container field 2.
	reflect.TypeFor[*api.CreateContainerRequest]():     event(func(x *api.CreateContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.PostCreateContainerRequest](): event(func(x *api.PostCreateContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.StartContainerRequest]():      event(func(x *api.StartContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.PostStartContainerRequest]():  event(func(x *api.PostStartContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.StopContainerRequest]():       event(func(x *api.StopContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.RemoveContainerRequest]():     event(func(x *api.RemoveContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
	reflect.TypeFor[*api.PostUpdateContainerRequest](): event(func(x *api.PostUpdateContainerRequest) (podField, ctrField) { return &x.Pod, &x.Container }),
}

// whole is the decoder of a type decoded by one function.
func whole[M proto.Message](decode func(UnmarshalOptions, []byte, M) error) decoder {
	return func(o UnmarshalOptions, b []byte, m proto.Message) error { return decode(o, b, m.(M)) }
}

// podField and ctrField locate an event request's pod and container fields.
type (
	podField = **api.PodSandbox
	ctrField = **api.Container
)

// event is the decoder of an event request whose pod and container (nil
// for pod events) fields returns.
func event[M proto.Message](fields func(M) (podField, ctrField)) decoder {
	return func(o UnmarshalOptions, b []byte, m proto.Message) error {
		x := m.(M)
		p, c := fields(x)
		return o.decodeEvent(b, x, p, c)
	}
}

// decodeError is the error of the hand decoder. Like protobuf-go's errors
// it wraps proto.Error, and an invalid UTF-8 error reports InvalidUTF8.
type decodeError struct {
	msg  string
	utf8 bool
}

func (e *decodeError) Error() string { return "fastdecode: " + e.msg }

// Unwrap makes errors.Is(err, proto.Error) hold, as for protobuf-go's errors.
func (e *decodeError) Unwrap() error { return proto.Error }

// InvalidUTF8 reports whether the error is about an invalid UTF-8 string
// (protobuf-go's UTF-8 error has the same method).
func (e *decodeError) InvalidUTF8() bool { return e.utf8 }

var (
	errDecode = &decodeError{msg: "cannot parse invalid wire-format data"}
	errUTF8   = &decodeError{msg: "string field contains invalid UTF-8", utf8: true}
)

// mergeOpts decodes fallback fields into a message without resetting it.
var mergeOpts = proto.UnmarshalOptions{Merge: true}

// consumeTag parses a field tag like protobuf-go's decoder: the field number
// must be in [1, protowire.MaxValidNumber]. n < 0 on error.
func consumeTag(b []byte) (num protowire.Number, typ protowire.Type, n int) {
	var v uint64
	if len(b) > 0 && b[0] < 0x80 {
		v, n = uint64(b[0]), 1
	} else {
		v, n = protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, 0, -1
		}
	}
	if x := v >> 3; x < uint64(protowire.MinValidNumber) || x > uint64(protowire.MaxValidNumber) {
		return 0, 0, -1
	}
	return protowire.Number(v >> 3), protowire.Type(v & 7), n
}

// consumeString parses the value of a proto3 string field (wire type bytes):
// it must be valid UTF-8. The result is a copy (see o.str).
func (o UnmarshalOptions) consumeString(b []byte) (string, int, error) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return "", 0, errDecode
	}
	if !o.TrustUTF8 && !utf8.Valid(v) {
		return "", 0, errUTF8
	}
	return o.str(v), n, nil
}

// str returns v as a string: a copy, or with OwnedInput the bytes themselves
// (never written to again, see UnmarshalOptions.OwnedInput).
func (o UnmarshalOptions) str(v []byte) string {
	if o.OwnedInput && len(v) > 0 {
		return unsafe.String(unsafe.SliceData(v), len(v))
	}
	return string(v)
}

// consumeMapEntry parses the value of a map<string,string> entry field (wire
// type bytes) as protobuf-go does: missing key or value is "", a repeated
// key or value field wins over earlier ones, key/value fields with another
// wire type and unknown fields are skipped, and every key or value string
// must be valid UTF-8.
func (o UnmarshalOptions) consumeMapEntry(b []byte) (key, val []byte, n int, err error) {
	e, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return nil, nil, 0, errDecode
	}
	for len(e) > 0 {
		num, typ, m := consumeTag(e)
		if m < 0 {
			return nil, nil, 0, errDecode
		}
		e = e[m:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(e)
			if m < 0 {
				return nil, nil, 0, errDecode
			}
			if !o.TrustUTF8 && !utf8.Valid(v) {
				return nil, nil, 0, errUTF8
			}
			if num == 1 {
				key = v
			} else {
				val = v
			}
			e = e[m:]
			continue
		}
		m = protowire.ConsumeFieldValue(num, typ, e)
		if m < 0 {
			return nil, nil, 0, errDecode
		}
		e = e[m:]
	}
	return key, val, n, nil
}

// fallback collects the raw fields (tags included) of one message that the
// hand decoder does not handle. Contiguous fields are kept as a range of the
// source; only non-contiguous ones are copied into buf.
type fallback struct {
	start, end int // pending range of src
	buf        []byte
}

// add records src[start:end] (one whole field) for the fallback.
func (f *fallback) add(src []byte, start, end int) {
	switch {
	case f.start == f.end:
		f.start, f.end = start, end
	case f.end == start:
		f.end = end
	default:
		if f.buf == nil {
			f.buf = make([]byte, 0, 2*(f.end-f.start)+(end-start))
		}
		f.buf = append(f.buf, src[f.start:f.end]...)
		f.start, f.end = start, end
	}
}

// apply merges the collected fields into m with protobuf-go. proto.Unmarshal
// copies what it keeps, so passing a range of src does not alias it.
func (f *fallback) apply(src []byte, m proto.Message) error {
	if f.buf == nil {
		if f.start == f.end {
			return nil
		}
		return mergeOpts.Unmarshal(src[f.start:f.end], m)
	}
	f.buf = append(f.buf, src[f.start:f.end]...)
	return mergeOpts.Unmarshal(f.buf, m)
}

// skipField consumes the value of a field the hand decoder does not handle.
//
// Every decoder of this package writes out its loop over the fields, around
// a switch of its own. The loop written once, as a walk with next and done
// methods or as a function called for each field, made BenchmarkSynchronize
// 8-18% slower and BenchmarkCreateContainer 5-10% (issue 24): the walk's
// state lives in memory or behind a call instead of in the decoder's
// registers.
func skipField(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return 0, errDecode
	}
	return n, nil
}

// countBytesFields adds to c[num], for each field number num < len(c), the
// number of fields of wire type bytes in b, to pre-size maps and slices. It
// stops silently at malformed data, which the decoder then reports.
func countBytesFields(b []byte, c []int) {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.BytesType {
			_, n = protowire.ConsumeBytes(b)
			if n >= 0 && int(num) < len(c) {
				c[num]++
			}
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return
		}
		b = b[n:]
	}
}

// decodeEvent decodes an event request {PodSandbox pod = 1; Container
// container = 2; ...} into x, whose pod and container fields are *pod and
// *ctr (ctr is nil for requests without a container). x is not reset.
func (o UnmarshalOptions) decodeEvent(src []byte, x proto.Message, pod **api.PodSandbox, ctr **api.Container) error {
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || (num == 2 && ctr != nil)) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errDecode
			}
			// A second occurrence merges into the first, as in protobuf-go.
			if num == 1 {
				if *pod == nil {
					*pod = &api.PodSandbox{}
				}
				if err := o.decodePod(v, *pod); err != nil {
					return err
				}
			} else {
				if *ctr == nil {
					*ctr = &api.Container{}
				}
				if err := o.decodeContainer(v, *ctr); err != nil {
					return err
				}
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

// decodeSynchronize decodes a SynchronizeRequest into x (not reset).
func (o UnmarshalOptions) decodeSynchronize(src []byte, x *api.SynchronizeRequest) error {
	var cnt [3]int
	countBytesFields(src, cnt[:])
	x.Pods = slices.Grow(x.Pods, cnt[1])
	x.Containers = slices.Grow(x.Containers, cnt[2])
	var fb fallback
	b := src
	for len(b) > 0 {
		start := len(src) - len(b)
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errDecode
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errDecode
			}
			if num == 1 {
				p := &api.PodSandbox{}
				if err := o.decodePod(v, p); err != nil {
					return err
				}
				x.Pods = append(x.Pods, p)
			} else {
				c := &api.Container{}
				if err := o.decodeContainer(v, c); err != nil {
					return err
				}
				x.Containers = append(x.Containers, c)
			}
			b = b[n:]
			continue
		case num == 3 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errDecode
			}
			x.More = v != 0
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
