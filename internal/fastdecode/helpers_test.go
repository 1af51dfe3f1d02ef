package fastdecode

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

// fastTypes are the message types with a fast path, in a fixed order (the
// fuzz target selects one by index).
var fastTypes = []proto.Message{
	&api.SynchronizeRequest{},
	&api.PodSandbox{},
	&api.Container{},
	&api.RunPodSandboxRequest{},
	&api.StopPodSandboxRequest{},
	&api.RemovePodSandboxRequest{},
	&api.PostUpdatePodSandboxRequest{},
	&api.CreateContainerRequest{},
	&api.PostCreateContainerRequest{},
	&api.StartContainerRequest{},
	&api.PostStartContainerRequest{},
	&api.StopContainerRequest{},
	&api.RemoveContainerRequest{},
	&api.PostUpdateContainerRequest{},
	&api.LinuxPodSandbox{},
	&api.LinuxContainer{},
	&api.LinuxResources{},
}

// podOnlyTypes are the fast event requests that have a pod and no container.
var podOnlyTypes = []proto.Message{
	&api.RunPodSandboxRequest{}, &api.StopPodSandboxRequest{},
	&api.RemovePodSandboxRequest{}, &api.PostUpdatePodSandboxRequest{},
}

// containerEventTypes are the fast event requests with a pod and a container.
var containerEventTypes = []proto.Message{
	&api.CreateContainerRequest{}, &api.PostCreateContainerRequest{},
	&api.StartContainerRequest{}, &api.PostStartContainerRequest{},
	&api.StopContainerRequest{}, &api.RemoveContainerRequest{},
	&api.PostUpdateContainerRequest{},
}

func newOf(m proto.Message) proto.Message { return m.ProtoReflect().New().Interface() }

func name(m proto.Message) string { return string(m.ProtoReflect().Descriptor().Name()) }

// prefilled returns a new message of m's type with fields set (see
// leanFull), to check that the decoders reset the message first.
func prefilled(m proto.Message) proto.Message {
	x := newOf(m)
	if !isFast(m) {
		codecfixture.Populate(x.ProtoReflect(), 7, 2, false)
		return x
	}
	if err := proto.Unmarshal(leanFull(m), x); err != nil {
		panic(err)
	}
	return x
}

func isFast(m proto.Message) bool {
	for _, typ := range fastTypes {
		if name(typ) == name(m) {
			return true
		}
	}
	return false
}

// leanFull returns a small valid encoding of a message of m's type that
// sets hand-decoded and fallback fields of its pod and container (see
// podFull, ctrFull) and has an unknown field.
func leanFull(m proto.Message) []byte {
	unknown := vint(1500, 1)
	switch m.(type) {
	case *api.SynchronizeRequest:
		return cat(byt(1, podFull), byt(2, ctrFull), vint(3, 1), unknown)
	case *api.PodSandbox:
		return cat(podFull, unknown)
	case *api.Container:
		return cat(ctrFull, unknown)
	case *api.LinuxPodSandbox:
		return cat(linuxPodFull, unknown)
	case *api.LinuxContainer:
		return cat(linuxCtrFull, unknown)
	case *api.LinuxResources:
		return cat(resFull, unknown)
	}
	if fd := m.ProtoReflect().Descriptor().Fields().ByNumber(2); fd != nil && fd.Message() != nil &&
		fd.Message().Name() == "Container" {
		return cat(byt(1, podFull), byt(2, ctrFull), unknown)
	}
	return cat(byt(1, podFull), unknown)
}

// diffDecode decodes b with proto.Unmarshal and with dec into fresh (for
// dec: prefilled) messages of typ's type and reports any difference: one
// erring and not the other, an error not wrapping proto.Error, results that
// are not proto.Equal, or a result that aliases the input (which is
// overwritten after dec returns). "" means they agree.
func diffDecode(typ proto.Message, b []byte, dec func([]byte, proto.Message) error) string {
	return diffDecodeRetaining(typ, b, dec, false)
}

// diffDecodeRetaining is diffDecode for a decoder that, with retains,
// may keep the bytes it decodes (NewCapture's SynchronizeRequest): they
// are not overwritten before the comparison.
func diffDecodeRetaining(typ proto.Message, b []byte, dec func([]byte, proto.Message) error, retains bool) string {
	want := newOf(typ)
	werr := proto.Unmarshal(b, want)

	in := bytes.Clone(b)
	got := prefilled(typ)
	gerr := dec(in, got)
	if !retains {
		for i := range in {
			in[i] = 0xA5
		}
	}
	switch {
	case (werr == nil) != (gerr == nil):
		return fmt.Sprintf("%s: proto.Unmarshal error %v, fastdecode error %v", name(typ), werr, gerr)
	case gerr != nil:
		if !errors.Is(gerr, proto.Error) {
			return fmt.Sprintf("%s: error %v does not wrap proto.Error", name(typ), gerr)
		}
		return ""
	case !proto.Equal(want, got):
		return fmt.Sprintf("%s: results differ\nproto.Unmarshal:\n%s\nfastdecode:\n%s\nunknown: %x vs %x",
			name(typ), textOf(want), textOf(got),
			want.ProtoReflect().GetUnknown(), got.ProtoReflect().GetUnknown())
	}
	return ""
}

func textOf(m proto.Message) string {
	return prototext.MarshalOptions{Multiline: true, EmitUnknown: true}.Format(m)
}

// Wire-building helpers.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }

func str(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func byt(num protowire.Number, parts ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), cat(parts...))
}

func vint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fix32(num protowire.Number, v uint32) []byte {
	return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), v)
}

func fix64(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

func group(num protowire.Number, parts ...[]byte) []byte {
	return cat(tag(num, protowire.StartGroupType), cat(parts...), tag(num, protowire.EndGroupType))
}

// entry is a map<string,string> entry field num with key k and value v.
func entry(num protowire.Number, k, v string) []byte { return byt(num, str(1, k), str(2, v)) }

func mustMarshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// bad is an invalid UTF-8 string.
const bad = "ok\xff\xfe"

// unsafeString returns a string sharing b's memory (to test that the
// harness catches aliasing).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// reflectNil returns a typed nil pointer of m's type.
func reflectNil(m proto.Message) proto.Message {
	return reflect.Zero(reflect.TypeOf(m)).Interface().(proto.Message)
}
