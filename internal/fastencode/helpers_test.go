package fastencode

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

func fullPod(n int) *api.PodSandbox {
	p := &api.PodSandbox{}
	codecfixture.Populate(p.ProtoReflect(), 3, n, true)
	return p
}

func fullContainer(n int) *api.Container {
	c := &api.Container{}
	codecfixture.Populate(c.ProtoReflect(), 5, n, true)
	return c
}

// noNetDevices returns c without net devices: its LinuxContainer is then
// encoded by hand (linux.go).
func noNetDevices(c *api.Container) *api.Container {
	c.Linux.NetDevices = nil
	return c
}

// encoder is one implementation under test (the real one, or a broken
// one in TestHarnessCatches).
type encoder struct {
	append func([]byte, proto.Message) ([]byte, error)
	size   func(proto.Message) int
}

var fast = encoder{
	append: func(b []byte, m proto.Message) ([]byte, error) {
		switch x := m.(type) {
		case *api.PodSandbox:
			return AppendPod(b, x)
		case *api.Container:
			return AppendContainer(b, x)
		}
		panic("not a pod or container")
	},
	size: func(m proto.Message) int {
		switch x := m.(type) {
		case *api.PodSandbox:
			return SizePod(x)
		case *api.Container:
			return SizeContainer(x)
		}
		panic("not a pod or container")
	},
}

// sized is fast as the runtime uses it: SizeX, then AppendSizedX.
var sized = encoder{
	append: func(b []byte, m proto.Message) ([]byte, error) {
		switch x := m.(type) {
		case *api.PodSandbox:
			SizePod(x)
			return AppendSizedPod(b, x)
		case *api.Container:
			SizeContainer(x)
			return AppendSizedContainer(b, x)
		}
		panic("not a pod or container")
	},
	size: fast.size,
}

// encoders are the ways to encode under test, by name.
var encoders = map[string]encoder{"AppendX": fast, "SizeX, AppendSizedX": sized}

var prefix = []byte("prefix")

// diffEncode encodes m with enc (appending to a non-empty prefix) and
// reports, "" meaning none: an error where proto.Marshal has none (or the
// reverse), an error not wrapping proto.Error, a prefix not preserved, a
// size differing from the length appended or from proto.Size, a decoding
// not proto.Equal to m, and, if exact, bytes differing from proto.Marshal's
// (plain and Deterministic).
func diffEncode(enc encoder, m proto.Message, exact bool) string {
	want, werr := proto.Marshal(m)
	in := append([]byte(nil), prefix...)
	got, gerr := enc.append(in, m)
	switch {
	case (werr == nil) != (gerr == nil):
		return fmt.Sprintf("proto.Marshal error %v, fastencode error %v", werr, gerr)
	case gerr != nil:
		if !errors.Is(gerr, proto.Error) {
			return fmt.Sprintf("error %v does not wrap proto.Error", gerr)
		}
		if !bytes.Equal(got, prefix) {
			return fmt.Sprintf("on error returned %q, want the prefix %q", got, prefix)
		}
		return ""
	case !bytes.HasPrefix(got, prefix):
		return "prefix not preserved"
	}
	got = got[len(prefix):]
	if s := enc.size(m); s != len(got) {
		return fmt.Sprintf("size %d, appended %d bytes", s, len(got))
	}
	if s := proto.Size(m); s != len(got) {
		return fmt.Sprintf("proto.Size %d, appended %d bytes", s, len(got))
	}
	back := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(got, back); err != nil {
		return fmt.Sprintf("decoding the encoding: %v", err)
	}
	if !m.ProtoReflect().IsValid() {
		// A typed nil encodes as an empty message.
		m = m.ProtoReflect().New().Interface()
	}
	if !proto.Equal(back, m) {
		return fmt.Sprintf("decoded differs\nwant:\n%s\ngot:\n%s", textOf(m), textOf(back))
	}
	if exact {
		if !bytes.Equal(got, want) {
			return fmt.Sprintf("bytes differ from proto.Marshal\nwant %x\ngot  %x", want, got)
		}
		det, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil || !bytes.Equal(got, det) {
			return fmt.Sprintf("bytes differ from Deterministic proto.Marshal (%v)\nwant %x\ngot  %x", err, det, got)
		}
	}
	return ""
}

func textOf(m proto.Message) string {
	return prototext.MarshalOptions{Multiline: true, EmitUnknown: true}.Format(m)
}
