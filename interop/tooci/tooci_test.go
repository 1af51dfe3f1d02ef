package tooci

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	upstream "github.com/containerd/nri/pkg/api"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ours "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
)

// source is where the generator takes its choices from.
type source interface {
	// IntN returns a number in [0, n).
	IntN(n int) int
}

// byteSource takes choices from a fuzzer's bytes, then zeros.
type byteSource struct{ b []byte }

func (s *byteSource) IntN(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 && len(s.b) > 0 {
		v = v<<8 | int(s.b[0])
		s.b = s.b[1:]
	}
	return v % n
}

// words are the strings the generator picks from: the propagation options
// ToOCI(Mount) looks for, enum-like names and ordinary values.
var words = []string{"", "rprivate", "rshared", "rslave", "bind", "ro", "/dev/null", "0-3", "c", "rwm", "SCMP_ACT_ERRNO", "x=y", "äö"}

// fill sets fields of m at random: at most depth levels of sub-messages,
// up to three list elements and two map entries, enum values defined and
// not, and never nrikit's extension fields (upstream has no such fields).
func fill(m protoreflect.Message, src source, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if int(fd.Number()) >= ours.ExtensionFieldMin || src.IntN(3) == 0 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range src.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind {
					if depth == 0 {
						break
					}
					e := l.NewElement()
					fill(e.Message(), src, depth-1)
					l.Append(e)
					continue
				}
				l.Append(scalar(fd, src))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range src.IntN(3) {
				k := scalar(fd.MapKey(), src).MapKey()
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					if depth == 0 {
						break
					}
					v := mp.NewValue()
					fill(v.Message(), src, depth-1)
					mp.Set(k, v)
					continue
				}
				mp.Set(k, scalar(fd.MapValue(), src))
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth > 0 {
				fill(m.Mutable(fd).Message(), src, depth-1)
			}
		default:
			m.Set(fd, scalar(fd, src))
		}
	}
}

// scalar returns a value of fd's (non-message) kind.
func scalar(fd protoreflect.FieldDescriptor, src source) protoreflect.Value {
	small := []int64{0, 1, -1, 2, 1 << 20, -1 << 40, 1<<63 - 1, -1 << 63}
	n := small[src.IntN(len(small))]
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(src.IntN(2) == 1)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		if i := src.IntN(vals.Len() + 1); i < vals.Len() {
			return protoreflect.ValueOfEnum(vals.Get(i).Number())
		}
		return protoreflect.ValueOfEnum(99) // not defined by the schema
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(words[src.IntN(len(words))])
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(words[src.IntN(len(words))]))
	}
	panic(fmt.Sprintf("tooci: no generator for %v (%s)", fd.Kind(), fd.FullName()))
}

// pair generates one of our messages of type O, encodes it and decodes it
// into ours and upstream's type U, so that both come from the same bytes.
func pair[O, U proto.Message](t *testing.T, src source, newO func() O, newU func() U) (O, U) {
	t.Helper()
	gen := newO()
	fill(gen.ProtoReflect(), src, 3)
	o, err := protodiff.Convert(gen, newO())
	if err != nil {
		t.Fatal(err)
	}
	u, err := protodiff.Convert(gen, newU())
	if err != nil {
		t.Fatal(err)
	}
	return o, u
}

// same fails t unless ours and theirs are deeply equal.
func same(t *testing.T, what string, in proto.Message, ours, theirs any) {
	t.Helper()
	if !reflect.DeepEqual(ours, theirs) {
		t.Fatalf("%s of %v:\nnrikit:   %#v\nupstream: %#v", what, in, ours, theirs)
	}
}

// compareAll generates one message of every converted type from src and
// compares the two conversions.
func compareAll(t *testing.T, src source) {
	t.Helper()
	{
		o, u := pair(t, src, func() *ours.LinuxResources { return &ours.LinuxResources{} }, func() *upstream.LinuxResources { return &upstream.LinuxResources{} })
		same(t, "LinuxResources.ToOCI", o, o.ToOCI(), u.ToOCI())
	}
	{
		o, u := pair(t, src, func() *ours.LinuxDevice { return &ours.LinuxDevice{} }, func() *upstream.LinuxDevice { return &upstream.LinuxDevice{} })
		same(t, "LinuxDevice.ToOCI", o, o.ToOCI(), u.ToOCI())
	}
	{
		o, u := pair(t, src, func() *ours.Hook { return &ours.Hook{} }, func() *upstream.Hook { return &upstream.Hook{} })
		same(t, "Hook.ToOCI", o, o.ToOCI(), u.ToOCI())
	}
	{
		o, u := pair(t, src, func() *ours.Mount { return &ours.Mount{} }, func() *upstream.Mount { return &upstream.Mount{} })
		same(t, "Mount.ToOCI(nil)", o, o.ToOCI(nil), u.ToOCI(nil))
		po, pu := "unchanged", "unchanged"
		mo, mu := o.ToOCI(&po), u.ToOCI(&pu)
		same(t, "Mount.ToOCI(&propagation)", o, []any{mo, po}, []any{mu, pu})
	}
	{
		o, u := pair(t, src, func() *ours.KeyValue { return &ours.KeyValue{} }, func() *upstream.KeyValue { return &upstream.KeyValue{} })
		same(t, "KeyValue.ToOCI", o, o.ToOCI(), u.ToOCI())
	}
	{
		o, u := pair(t, src, func() *ours.LinuxIOPriority { return &ours.LinuxIOPriority{} }, func() *upstream.LinuxIOPriority { return &upstream.LinuxIOPriority{} })
		same(t, "LinuxIOPriority.ToOCI", o, o.ToOCI(), u.ToOCI())
	}
	{
		o, u := pair(t, src, func() *ours.LinuxScheduler { return &ours.LinuxScheduler{} }, func() *upstream.LinuxScheduler { return &upstream.LinuxScheduler{} })
		same(t, "LinuxScheduler.ToOCI", o, o.ToOCI(), u.ToOCI())
		same(t, "ToOCILinuxSchedulerFlags", o, ours.ToOCILinuxSchedulerFlags(o.GetFlags()), upstream.ToOCILinuxSchedulerFlags(u.GetFlags()))
	}
	{
		o, u := pair(t, src, func() *ours.LinuxMemoryPolicy { return &ours.LinuxMemoryPolicy{} }, func() *upstream.LinuxMemoryPolicy { return &upstream.LinuxMemoryPolicy{} })
		same(t, "LinuxMemoryPolicy.ToOCI", o, o.ToOCI(), u.ToOCI())
		same(t, "ToOCIMemoryPolicyFlags", o, ours.ToOCIMemoryPolicyFlags(o.GetFlags()...), upstream.ToOCIMemoryPolicyFlags(u.GetFlags()...))
	}
	{
		// A container's linux part carries the net devices (a map), the
		// seccomp rules and their arguments (lists).
		o, u := pair(t, src, func() *ours.LinuxContainer { return &ours.LinuxContainer{} }, func() *upstream.LinuxContainer { return &upstream.LinuxContainer{} })
		same(t, "ToOCILinuxNetDevices", o, ours.ToOCILinuxNetDevices(o.GetNetDevices()), upstream.ToOCILinuxNetDevices(u.GetNetDevices()))
		for h, d := range o.GetNetDevices() {
			same(t, "LinuxNetDevice.ToOCI", d, d.ToOCI(), u.GetNetDevices()[h].ToOCI())
		}
		same(t, "ToOCILinuxSyscalls", o, ours.ToOCILinuxSyscalls(o.GetSeccompPolicy().GetSyscalls()), upstream.ToOCILinuxSyscalls(u.GetSeccompPolicy().GetSyscalls()))
		for i, s := range o.GetSeccompPolicy().GetSyscalls() {
			same(t, "ToOCILinuxSeccompArgs", s, ours.ToOCILinuxSeccompArgs(s.GetArgs()), upstream.ToOCILinuxSeccompArgs(u.GetSeccompPolicy().GetSyscalls()[i].GetArgs()))
		}
		same(t, "LinuxIOPriority.ToOCI (container)", o, o.GetIoPriority().ToOCI(), u.GetIoPriority().ToOCI())
		same(t, "LinuxScheduler.ToOCI (container)", o, o.GetScheduler().ToOCI(), u.GetScheduler().ToOCI())
		for i, d := range o.GetDevices() {
			same(t, "LinuxDevice.ToOCI (container)", d, d.ToOCI(), u.GetDevices()[i].ToOCI())
		}
		same(t, "LinuxResources.ToOCI (container)", o, o.GetResources().ToOCI(), u.GetResources().ToOCI())
	}
}

// TestToOCIGenerated compares the conversions on messages generated from a
// fixed seed, so that every run checks the same cases.
func TestToOCIGenerated(t *testing.T) {
	src := rand.New(rand.NewPCG(26, 1))
	for range 3000 {
		compareAll(t, src)
	}
}

// TestToOCINil compares the conversions of nil messages and of nil and
// empty lists, where upstream returns nil, zero values or empty slices.
func TestToOCINil(t *testing.T) {
	same(t, "LinuxResources.ToOCI", nil, (*ours.LinuxResources)(nil).ToOCI(), (*upstream.LinuxResources)(nil).ToOCI())
	same(t, "LinuxResources.ToOCI", nil, (&ours.LinuxResources{}).ToOCI(), (&upstream.LinuxResources{}).ToOCI())
	same(t, "LinuxDevice.ToOCI", nil, (*ours.LinuxDevice)(nil).ToOCI(), (*upstream.LinuxDevice)(nil).ToOCI())
	same(t, "LinuxIOPriority.ToOCI", nil, (*ours.LinuxIOPriority)(nil).ToOCI(), (*upstream.LinuxIOPriority)(nil).ToOCI())
	same(t, "LinuxScheduler.ToOCI", nil, (*ours.LinuxScheduler)(nil).ToOCI(), (*upstream.LinuxScheduler)(nil).ToOCI())
	same(t, "LinuxMemoryPolicy.ToOCI", nil, (*ours.LinuxMemoryPolicy)(nil).ToOCI(), (*upstream.LinuxMemoryPolicy)(nil).ToOCI())
	same(t, "LinuxNetDevice.ToOCI", nil, (*ours.LinuxNetDevice)(nil).ToOCI(), (*upstream.LinuxNetDevice)(nil).ToOCI())
	same(t, "ToOCILinuxNetDevices", nil, ours.ToOCILinuxNetDevices(nil), upstream.ToOCILinuxNetDevices(nil))
	same(t, "ToOCILinuxNetDevices", nil, ours.ToOCILinuxNetDevices(map[string]*ours.LinuxNetDevice{}), upstream.ToOCILinuxNetDevices(map[string]*upstream.LinuxNetDevice{}))
	same(t, "ToOCILinuxSyscalls", nil, ours.ToOCILinuxSyscalls(nil), upstream.ToOCILinuxSyscalls(nil))
	same(t, "ToOCILinuxSeccompArgs", nil, ours.ToOCILinuxSeccompArgs(nil), upstream.ToOCILinuxSeccompArgs(nil))
	same(t, "ToOCILinuxSchedulerFlags", nil, ours.ToOCILinuxSchedulerFlags(nil), upstream.ToOCILinuxSchedulerFlags(nil))
	same(t, "ToOCILinuxSchedulerFlags", nil, ours.ToOCILinuxSchedulerFlags([]ours.LinuxSchedulerFlag{}), upstream.ToOCILinuxSchedulerFlags([]upstream.LinuxSchedulerFlag{}))
	same(t, "ToOCIMemoryPolicyFlags", nil, ours.ToOCIMemoryPolicyFlags(), upstream.ToOCIMemoryPolicyFlags())
	same(t, "ToOCIMemoryPolicyFlags", nil, ours.ToOCIMemoryPolicyFlags([]ours.MpolFlag{}...), upstream.ToOCIMemoryPolicyFlags([]upstream.MpolFlag{}...))
	// Hooks keep an empty list empty (upstream copies it), mounts drop it.
	h := &ours.Hook{Args: []string{}, Env: nil}
	same(t, "Hook.ToOCI", h, h.ToOCI(), (&upstream.Hook{Args: []string{}}).ToOCI())
	m := &ours.Mount{Options: []string{}}
	same(t, "Mount.ToOCI", m, m.ToOCI(nil), (&upstream.Mount{Options: []string{}}).ToOCI(nil))
	same(t, "oci types", nil, reflect.TypeOf(m.ToOCI(nil)), reflect.TypeOf(rspec.Mount{}))
}

// FuzzToOCI compares the conversions on messages built from the fuzzer's
// bytes. Without -fuzz it runs over the seeds.
func FuzzToOCI(f *testing.F) {
	for i := range uint64(64) {
		b := make([]byte, 256)
		for j := 0; j < len(b); j += 8 {
			binary.LittleEndian.PutUint64(b[j:], rand.New(rand.NewPCG(i, uint64(j))).Uint64())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareAll(t, &byteSource{b: data})
	})
}
