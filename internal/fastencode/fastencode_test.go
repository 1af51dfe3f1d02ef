package fastencode

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

const bad = "ok\xff\xfe"

// TestFieldLists fails when a field is added to a hand-encoded message
// (the encoder would silently drop it).
func TestFieldLists(t *testing.T) {
	want := map[protoreflect.FullName]int{
		"nri.pkg.api.v1alpha1.PodSandbox": 10,
		"nri.pkg.api.v1alpha1.Container":  22,
		"nri.pkg.api.v1alpha1.Mount":      4,
		// Linux parts (linux.go).
		"nri.pkg.api.v1alpha1.LinuxPodSandbox": 6,
		"nri.pkg.api.v1alpha1.LinuxContainer":  12,
		"nri.pkg.api.v1alpha1.LinuxResources":  8,
		"nri.pkg.api.v1alpha1.LinuxNamespace":  2,
	}
	for _, m := range []proto.Message{&api.PodSandbox{}, &api.Container{}, &api.Mount{},
		&api.LinuxPodSandbox{}, &api.LinuxContainer{}, &api.LinuxResources{}, &api.LinuxNamespace{}} {
		d := m.ProtoReflect().Descriptor()
		fs := d.Fields()
		if fs.Len() != want[d.FullName()] {
			t.Errorf("%s has %d fields, fastencode knows %d", d.FullName(), fs.Len(), want[d.FullName()])
		}
		for i := 0; i < fs.Len(); i++ {
			if n := fs.Get(i).Number(); int(n) != i+1 {
				t.Errorf("%s: field %d is number %d", d.FullName(), i, n)
			}
		}
	}
}

func TestPopulated(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		for i, m := range []proto.Message{fullPod(n), fullContainer(n), noNetDevices(fullContainer(n))} {
			if bad := codecfixture.Unset(m.ProtoReflect(), true); bad != "" && i < 2 {
				t.Fatalf("populate left %s unset", bad)
			}
			for name, enc := range encoders {
				if d := diffEncode(enc, m, n == 1); d != "" {
					t.Errorf("%s: %T with %d map entries: %s", name, m, n, d)
				}
			}
		}
	}
}

// edgeCases returns messages at the edges of the encoding.
func edgeCases() map[string]proto.Message {
	long := strings.Repeat("x", 200)
	huge := strings.Repeat("y", 20000)
	nilMount := fullContainer(1)
	nilMount.Mounts = []*api.Mount{nil, {Destination: "/d"}, nil}
	nilSubs := &api.Container{Rlimits: []*api.POSIXRlimit{nil, {Type: "RLIMIT_NOFILE", Hard: 1}}, CDIDevices: []*api.CDIDevice{nil}}
	return map[string]proto.Message{
		"empty pod":       &api.PodSandbox{},
		"empty container": &api.Container{},
		"empty maps":      &api.Container{Labels: map[string]string{}, Annotations: map[string]string{}},
		"empty map key and value": &api.PodSandbox{
			Labels: map[string]string{"": ""}, Annotations: map[string]string{"k": ""},
		},
		"empty map key":   &api.Container{Labels: map[string]string{"": "v"}, Annotations: map[string]string{"": ""}},
		"empty map value": &api.Container{Labels: map[string]string{"k": ""}},
		"empty strings in repeated": &api.Container{
			Args: []string{"", "a", ""}, Env: []string{""},
			Mounts: []*api.Mount{{Options: []string{"", ""}}, {}},
		},
		"empty ips":        &api.PodSandbox{Ips: []string{"", ""}},
		"empty mount":      &api.Container{Mounts: []*api.Mount{{}}},
		"nil mounts":       nilMount,
		"nil sub-messages": nilSubs,
		"empty sub-messages": &api.Container{
			Hooks: &api.Hooks{}, Linux: &api.LinuxContainer{}, User: &api.User{}, Image: &api.Image{},
			Rlimits: []*api.POSIXRlimit{{}}, CDIDevices: []*api.CDIDevice{{}},
		},
		"empty pod linux": &api.PodSandbox{Linux: &api.LinuxPodSandbox{}},
		"negative": &api.Container{State: api.ContainerState(-1), ExitCode: -1, CreatedAt: -1,
			StartedAt: -1 << 62, FinishedAt: 1},
		"max": &api.Container{Pid: 1<<32 - 1, ExitCode: 1<<31 - 1, CreatedAt: 1<<63 - 1,
			State: api.ContainerState_CONTAINER_STOPPED},
		"zero values": &api.Container{Id: "", State: 0, Pid: 0, CreatedAt: 0, ExitCode: 0, Args: []string{}},
		"long strings": &api.Container{Id: long, StatusMessage: huge, Labels: map[string]string{long: huge},
			Mounts: []*api.Mount{{Destination: long, Options: []string{huge}}}},
		"long pod": &api.PodSandbox{Id: huge, Annotations: map[string]string{"a": long}, Ips: []string{long}},
		// Sub-messages whose lengths need 2 and 3 bytes (back-patching).
		"long linux": &api.Container{Id: "c", Linux: &api.LinuxContainer{CgroupsPath: long}, Pid: 7},
		"huge linux": &api.Container{Linux: &api.LinuxContainer{CgroupsPath: huge}, Image: &api.Image{Name: long}},
		"huge pod linux": &api.PodSandbox{Linux: &api.LinuxPodSandbox{CgroupParent: huge}, Pid: 1,
			Ips: []string{"10.0.0.1"}},
		"unknown only": withUnknown(&api.Container{}),
		"mount unknown": &api.Container{Mounts: []*api.Mount{
			withUnknown(&api.Mount{}), withUnknown(&api.Mount{Type: "bind"})}},
		// The Linux parts encoded by hand (linux.go).
		"nil linux elements": &api.Container{Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{nil, {Type: "pid"}, {}},
			Devices:    []*api.LinuxDevice{nil},
			Resources: &api.LinuxResources{HugepageLimits: []*api.HugepageLimit{nil, {}},
				Devices: []*api.LinuxDeviceCgroup{nil}, Unified: map[string]string{"": ""}},
			Sysctl: map[string]string{"k": ""},
		}},
		"empty linux resources": &api.PodSandbox{Linux: &api.LinuxPodSandbox{
			PodOverhead: &api.LinuxResources{}, PodResources: &api.LinuxResources{Memory: &api.LinuxMemory{}},
			Namespaces: []*api.LinuxNamespace{nil}, Resources: &api.LinuxResources{Unified: map[string]string{}},
		}},
		"huge unified": &api.PodSandbox{Linux: &api.LinuxPodSandbox{
			Resources: &api.LinuxResources{Unified: map[string]string{"memory.high": huge}}}},
		"linux unknown": &api.Container{Linux: withUnknown(&api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{withUnknown(&api.LinuxNamespace{Type: "ipc"})},
			Resources:  withUnknown(&api.LinuxResources{}),
		})},
		"pod linux unknown": &api.PodSandbox{Linux: withUnknown(&api.LinuxPodSandbox{CgroupsPath: "/p"})},
		"nil pod":           (*api.PodSandbox)(nil),
		"nil container":     (*api.Container)(nil),
	}
}

func withUnknown[M proto.Message](m M) M {
	m.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 1999, protowire.VarintType), 300))
	return m
}

func TestEdgeCases(t *testing.T) {
	for name, m := range edgeCases() {
		// At most one entry per map in every edge case: bytes must match.
		for encName, enc := range encoders {
			if d := diffEncode(enc, m, true); d != "" {
				t.Errorf("%s: %s: %s", encName, name, d)
			}
		}
	}
}

// TestInvalidUTF8 sets each string (recursively, map keys and values
// included) of a populated message to invalid UTF-8, one at a time: both
// protobuf-go and fastencode must fail.
func TestInvalidUTF8(t *testing.T) {
	for _, mk := range []func() proto.Message{
		func() proto.Message { return fullPod(1) },
		func() proto.Message { return fullContainer(1) },
		func() proto.Message { return noNetDevices(fullContainer(1)) },
	} {
		count := 0
		for i := 0; ; i++ {
			m := mk()
			if !corrupt(m.ProtoReflect(), &i) {
				break
			}
			count++
			if _, err := proto.Marshal(m); err == nil {
				t.Fatalf("%T string %d: proto.Marshal accepts invalid UTF-8", m, count)
			}
			for name, enc := range encoders {
				if d := diffEncode(enc, m, true); d != "" {
					t.Errorf("%s: %T string %d: %s", name, m, count, d)
				}
				if _, err := enc.append(nil, m); !errors.Is(err, proto.Error) {
					t.Errorf("%s: %T string %d: error %v", name, m, count, err)
				}
			}
			i = count
		}
		t.Logf("%T: %d strings corrupted one at a time", mk(), count)
		if count < 10 {
			t.Fatalf("%T: only %d strings corrupted", mk(), count)
		}
	}
}

// corrupt replaces the *nth string found in m (depth first; map keys and
// values count separately) by invalid UTF-8 and reports whether there was
// one; it decrements *n as it goes.
func corrupt(m protoreflect.Message, n *int) bool {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			var done bool
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				if fd.MapKey().Kind() == protoreflect.StringKind {
					if *n == 0 {
						mp.Clear(k)
						mp.Set(protoreflect.ValueOfString(bad).MapKey(), v)
						done = true
						return false
					}
					*n--
				}
				switch {
				case fd.MapValue().Kind() == protoreflect.StringKind:
					if *n == 0 {
						mp.Set(k, protoreflect.ValueOfString(bad))
						done = true
						return false
					}
					*n--
				case fd.MapValue().Message() != nil:
					if corrupt(v.Message(), n) {
						done = true
						return false
					}
				}
				return true
			})
			if done {
				return true
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < l.Len(); j++ {
				switch {
				case fd.Kind() == protoreflect.StringKind:
					if *n == 0 {
						l.Set(j, protoreflect.ValueOfString(bad))
						return true
					}
					*n--
				case fd.Message() != nil:
					if corrupt(l.Get(j).Message(), n) {
						return true
					}
				}
			}
		case fd.Message() != nil:
			if m.Has(fd) && corrupt(m.Mutable(fd).Message(), n) {
				return true
			}
		case fd.Kind() == protoreflect.StringKind:
			if *n == 0 {
				m.Set(fd, protoreflect.ValueOfString(bad))
				return true
			}
			*n--
		}
	}
	return false
}

// TestHarnessCatches checks that diffEncode detects broken encoders.
func TestHarnessCatches(t *testing.T) {
	broken := map[string]encoder{
		"drops unknown fields": {
			append: func(b []byte, m proto.Message) ([]byte, error) {
				m = proto.Clone(m)
				m.ProtoReflect().SetUnknown(nil)
				return fast.append(b, m)
			},
			size: fast.size,
		},
		"size off by one": {append: fast.append, size: func(m proto.Message) int { return fast.size(m) + 1 }},
		"drops a map entry": {
			append: func(b []byte, m proto.Message) ([]byte, error) {
				c := proto.Clone(m).(*api.Container)
				for k := range c.Labels {
					delete(c.Labels, k)
					break
				}
				return fast.append(b, c)
			},
			size: fast.size,
		},
		"field order": {
			append: func(b []byte, m proto.Message) ([]byte, error) {
				c := m.(*api.Container)
				// Pid before everything else: decodes equal, bytes differ.
				b = protowire.AppendVarint(protowire.AppendTag(b, 12, protowire.VarintType), uint64(c.Pid))
				c2 := proto.Clone(c).(*api.Container)
				c2.Pid = 0
				return fast.append(b, c2)
			},
			size: fast.size,
		},
		"no UTF-8 check": {
			append: func(b []byte, m proto.Message) ([]byte, error) {
				b, err := fast.append(b, m)
				if err != nil {
					return append(b, "oops"...), nil
				}
				return b, nil
			},
			size: fast.size,
		},
	}
	for name, enc := range broken {
		c := fullContainer(1)
		if name == "no UTF-8 check" {
			c.Env[0] = bad
		}
		if d := diffEncode(enc, c, true); d == "" {
			t.Errorf("%s: not detected", name)
		} else {
			t.Logf("%s: %s", name, strings.SplitN(d, "\n", 2)[0])
		}
	}
}

// TestAppendIntoCapacity checks that appending after a size pass into a
// buffer of exactly that capacity does not reallocate.
func TestAppendIntoCapacity(t *testing.T) {
	c := codecfixture.Container(1, "pod")
	n := SizeContainer(c)
	b := make([]byte, 0, n)
	b2, err := AppendContainer(b, c)
	if err != nil || len(b2) != n || &b2[:1][0] != &b[:1][0] {
		t.Fatalf("err %v, len %d want %d, reallocated %v", err, len(b2), n, &b2[:1][0] != &b[:1][0])
	}
}

// TestAppendSizedSkipsSizing checks that AppendSizedContainer, after
// SizeContainer, does not size the sub-messages protobuf-go encodes
// again: with maps in a LinuxContainer that has net devices (left to
// protobuf-go, whose map iteration allocates), SizeContainer and
// AppendSizedContainer allocate less than SizeContainer and
// AppendContainer.
func TestAppendSizedSkipsSizing(t *testing.T) {
	c := &api.Container{Id: "c", Linux: &api.LinuxContainer{
		Sysctl:     map[string]string{"net.core.somaxconn": "1024"},
		NetDevices: map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}},
	}}
	buf := make([]byte, 0, 2*SizeContainer(c))
	var err error
	plain := testing.AllocsPerRun(50, func() {
		SizeContainer(c)
		_, err = AppendContainer(buf, c)
	})
	cached := testing.AllocsPerRun(50, func() {
		SizeContainer(c)
		_, err = AppendSizedContainer(buf, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if cached >= plain {
		t.Errorf("SizeContainer and AppendSizedContainer allocate %.0f times, SizeContainer and AppendContainer %.0f: the sizes were computed again", cached, plain)
	}
}

// TestLinuxByHandAllocs checks that the Linux parts encoded by hand, maps
// included, allocate nothing (protobuf-go's map iteration would).
func TestLinuxByHandAllocs(t *testing.T) {
	p, c := fullPod(2), noNetDevices(fullContainer(2))
	buf := make([]byte, 0, 2*(SizePod(p)+SizeContainer(c)))
	var err error
	allocs := testing.AllocsPerRun(50, func() {
		SizePod(p)
		b, _ := AppendSizedPod(buf, p)
		SizeContainer(c)
		_, err = AppendSizedContainer(b, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs > 0 {
		t.Errorf("encoding a pod and a container allocates %.0f times, want none", allocs)
	}
}
