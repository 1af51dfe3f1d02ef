package merge_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// room returns s with spare capacity, as a runtime's slices may have: an
// append that wrongly shares the backing array then writes into memory
// another view of the same container sees.
func room[S ~[]E, E any](s S) S { return append(make(S, 0, len(s)+8), s...) }

// richContainer is a container with every part the merge may change in
// the view filled in, lists with spare capacity.
func richContainer() *api.Container {
	return &api.Container{
		Id:           "ctr0",
		PodSandboxId: "pod0",
		Name:         "ctr0",
		Labels:       map[string]string{"l": "1"},
		Annotations:  map[string]string{"orig": "a", "other": "b"},
		Args:         room([]string{"echo", "original"}),
		Env:          room([]string{"KEEP=1", "ORIG=2", "LAST=3"}),
		Mounts: room([]*api.Mount{
			{Destination: "/data/v0", Source: "/src0", Type: "bind", Options: room([]string{"rbind"})},
			{Destination: "/data/v1", Source: "/src1", Type: "bind"},
		}),
		Hooks:   &api.Hooks{Prestart: room([]*api.Hook{{Path: "/h1"}}), Poststop: room([]*api.Hook{{Path: "/p1"}})},
		Rlimits: room([]*api.POSIXRlimit{{Type: "nofile", Hard: 10, Soft: 5}}),
		Linux: &api.LinuxContainer{
			Namespaces: room([]*api.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/netns/orig"}}),
			Devices:    room([]*api.LinuxDevice{{Path: "/dev/orig", Type: "c", Major: 1, Minor: 1}}),
			Resources: &api.LinuxResources{
				Memory:         &api.LinuxMemory{Limit: api.Int64(1000), Swap: api.Int64(2000)},
				Cpu:            &api.LinuxCPU{Shares: api.UInt64(100), Cpus: "0-1"},
				HugepageLimits: room([]*api.HugepageLimit{{PageSize: "1G", Limit: 1}}),
				BlockioClass:   api.String("bio"),
				RdtClass:       api.String("rdt"),
				Unified:        map[string]string{"memory.high": "1"},
				Devices:        room([]*api.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}),
				Pids:           &api.LinuxPids{Limit: 4096},
			},
			OomScoreAdj:   &api.OptionalInt{Value: 1000},
			CgroupsPath:   "/orig",
			IoPriority:    &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4},
			SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ERRNO"},
			Sysctl:        map[string]string{"net.ipv4.ip_forward": "0"},
			NetDevices:    map[string]*api.LinuxNetDevice{"eth0": {Name: "net0"}},
			Scheduler:     &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_OTHER, Nice: 1},
		},
	}
}

// Every field family the merge reflects in the view: the change shows in
// Container() and the caller's container is left as it was.
func TestCreateLeavesInputUntouched(t *testing.T) {
	for _, tc := range []struct {
		name   string
		adjust func(a *api.ContainerAdjustment)
		view   func(v *api.Container) // the change expected in the view; nil: none
	}{
		{"annotation/add", func(a *api.ContainerAdjustment) { a.AddAnnotation("new", "v") },
			func(v *api.Container) { v.Annotations["new"] = "v" }},
		{"annotation/replace", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("orig"); a.AddAnnotation("orig", "c") },
			func(v *api.Container) { v.Annotations["orig"] = "c" }},
		{"annotation/remove", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("orig") }, nil}, // not reflected (upstream)
		{"mount/add", func(a *api.ContainerAdjustment) { a.AddMount(&api.Mount{Destination: "/new", Source: "/s"}) },
			func(v *api.Container) { v.Mounts = append(v.Mounts, &api.Mount{Destination: "/new", Source: "/s"}) }},
		{"mount/replace", func(a *api.ContainerAdjustment) { a.AddMount(&api.Mount{Destination: "/data/v0", Source: "/other"}) },
			func(v *api.Container) {
				v.Mounts = append(v.Mounts[1:], &api.Mount{Destination: "/data/v0", Source: "/other"})
			}},
		{"mount/remove", func(a *api.ContainerAdjustment) { a.RemoveMount("/data/v0") },
			func(v *api.Container) { v.Mounts = v.Mounts[1:] }},
		{"env/add", func(a *api.ContainerAdjustment) { a.AddEnv("NEW", "x") },
			func(v *api.Container) { v.Env = append(v.Env, "NEW=x") }},
		{"env/replace", func(a *api.ContainerAdjustment) { a.AddEnv("KEEP", "x") },
			func(v *api.Container) { v.Env = []string{"ORIG=2", "LAST=3", "KEEP=x"} }},
		{"env/remove", func(a *api.ContainerAdjustment) { a.RemoveEnv("KEEP") },
			func(v *api.Container) { v.Env = []string{"ORIG=2", "LAST=3"} }},
		{"args/set", func(a *api.ContainerAdjustment) { a.SetArgs([]string{"sleep", "1"}) },
			func(v *api.Container) { v.Args = []string{"sleep", "1"} }},
		{"args/update", func(a *api.ContainerAdjustment) { a.UpdateArgs([]string{"sleep", "2"}) },
			func(v *api.Container) { v.Args = []string{"sleep", "2"} }},
		{"hooks", func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/h2"}}, StartContainer: []*api.Hook{{Path: "/s"}}})
		}, func(v *api.Container) {
			v.Hooks.Prestart = append(v.Hooks.Prestart, &api.Hook{Path: "/h2"})
			v.Hooks.StartContainer = []*api.Hook{{Path: "/s"}}
		}},
		{"rlimits", func(a *api.ContainerAdjustment) { a.AddRlimit("nproc", 2, 1) },
			func(v *api.Container) {
				v.Rlimits = append(v.Rlimits, &api.POSIXRlimit{Type: "nproc", Hard: 2, Soft: 1})
			}},
		{"devices/add", func(a *api.ContainerAdjustment) { a.AddDevice(&api.LinuxDevice{Path: "/dev/new", Type: "b"}) },
			func(v *api.Container) {
				v.Linux.Devices = append(v.Linux.Devices, &api.LinuxDevice{Path: "/dev/new", Type: "b"})
			}},
		{"devices/replace", func(a *api.ContainerAdjustment) { a.AddDevice(&api.LinuxDevice{Path: "/dev/orig", Type: "b"}) },
			func(v *api.Container) { v.Linux.Devices = []*api.LinuxDevice{{Path: "/dev/orig", Type: "b"}} }},
		{"devices/remove", func(a *api.ContainerAdjustment) { a.RemoveDevice("/dev/orig") },
			func(v *api.Container) { v.Linux.Devices = nil }},
		{"resources/memory", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryLimit(42)
			a.SetLinuxMemoryReservation(21)
			a.SetLinuxMemorySwappiness(10)
		}, func(v *api.Container) {
			m := v.Linux.Resources.Memory
			m.Limit, m.Reservation, m.Swappiness = api.Int64(42), api.Int64(21), api.UInt64(10)
		}},
		{"resources/cpu", func(a *api.ContainerAdjustment) {
			a.SetLinuxCPUShares(7)
			a.SetLinuxCPUQuota(5000)
			a.SetLinuxCPUSetCPUs("3")
		}, func(v *api.Container) {
			c := v.Linux.Resources.Cpu
			c.Shares, c.Quota, c.Cpus = api.UInt64(7), api.Int64(5000), "3"
		}},
		{"resources/pids", func(a *api.ContainerAdjustment) { a.SetLinuxPidLimits(9) },
			func(v *api.Container) { v.Linux.Resources.Pids = &api.LinuxPids{Limit: 9} }},
		{"resources/hugepages", func(a *api.ContainerAdjustment) { a.AddLinuxHugepageLimit("2M", 8) },
			func(v *api.Container) {
				r := v.Linux.Resources
				r.HugepageLimits = append(r.HugepageLimits, &api.HugepageLimit{PageSize: "2M", Limit: 8})
			}},
		{"resources/unified", func(a *api.ContainerAdjustment) { a.AddLinuxUnified("memory.max", "2") },
			func(v *api.Container) { v.Linux.Resources.Unified["memory.max"] = "2" }},
		{"resources/blockio", func(a *api.ContainerAdjustment) { a.SetLinuxBlockIOClass("io") },
			func(v *api.Container) { v.Linux.Resources.BlockioClass = api.String("io") }},
		{"resources/rdt class", func(a *api.ContainerAdjustment) { a.SetLinuxRDTClass("gold") },
			func(v *api.Container) { v.Linux.Resources.RdtClass = api.String("gold") }},
		{"resources/devices", func(a *api.ContainerAdjustment) {
			a.SetLinuxPidLimits(9) // makes the Linux resources of the adjustment
			a.Linux.Resources.Devices = []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Access: "r"}}
		}, func(v *api.Container) {
			r := v.Linux.Resources
			r.Pids = &api.LinuxPids{Limit: 9}
			r.Devices = append(r.Devices, &api.LinuxDeviceCgroup{Allow: true, Type: "c", Access: "r"})
		}},
		{"cgroups path", func(a *api.ContainerAdjustment) { a.SetLinuxCgroupsPath("/new") },
			func(v *api.Container) { v.Linux.CgroupsPath = "/new" }},
		{"oom score", func(a *api.ContainerAdjustment) { score := -5; a.SetLinuxOomScoreAdj(&score) },
			func(v *api.Container) { v.Linux.OomScoreAdj = &api.OptionalInt{Value: -5} }},
		{"io priority", func(a *api.ContainerAdjustment) {
			a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 1})
		}, func(v *api.Container) {
			v.Linux.IoPriority = &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 1}
		}},
		{"seccomp", func(a *api.ContainerAdjustment) {
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"})
		},
			func(v *api.Container) { v.Linux.SeccompPolicy = &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"} }},
		{"namespaces/replace", func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/netns/new"})
		}, func(v *api.Container) {
			v.Linux.Namespaces[1] = &api.LinuxNamespace{Type: "network", Path: "/netns/new"}
		}},
		{"namespaces/add", func(a *api.ContainerAdjustment) { a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "ipc"}) },
			func(v *api.Container) {
				v.Linux.Namespaces = append(v.Linux.Namespaces, &api.LinuxNamespace{Type: "ipc"})
			}},
		{"namespaces/remove", func(a *api.ContainerAdjustment) { a.RemoveNamespace(&api.LinuxNamespace{Type: "pid"}) },
			func(v *api.Container) { v.Linux.Namespaces = v.Linux.Namespaces[1:] }},
		{"sysctls/add", func(a *api.ContainerAdjustment) { a.SetLinuxSysctl("kernel.x", "1") },
			func(v *api.Container) { v.Linux.Sysctl["kernel.x"] = "1" }},
		{"sysctls/replace", func(a *api.ContainerAdjustment) {
			a.RemoveLinuxSysctl("net.ipv4.ip_forward")
			a.SetLinuxSysctl("net.ipv4.ip_forward", "1")
		}, func(v *api.Container) { v.Linux.Sysctl["net.ipv4.ip_forward"] = "1" }},
		{"net devices/add", func(a *api.ContainerAdjustment) { a.AddLinuxNetDevice("eth1", &api.LinuxNetDevice{Name: "net1"}) },
			func(v *api.Container) { v.Linux.NetDevices["eth1"] = &api.LinuxNetDevice{Name: "net1"} }},
		{"net devices/replace", func(a *api.ContainerAdjustment) {
			a.RemoveLinuxNetDevice("eth0")
			a.AddLinuxNetDevice("eth0", &api.LinuxNetDevice{Name: "other"})
		}, func(v *api.Container) { v.Linux.NetDevices["eth0"] = &api.LinuxNetDevice{Name: "other"} }},
		{"scheduler", func(a *api.ContainerAdjustment) {
			a.SetLinuxScheduler(&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10})
		}, func(v *api.Container) {
			v.Linux.Scheduler = &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10}
		}},
		// Not reflected in the view.
		{"CDI device", func(a *api.ContainerAdjustment) { a.AddCDIDevice(&api.CDIDevice{Name: "v/d=0"}) }, nil},
		{"rdt", func(a *api.ContainerAdjustment) { a.SetLinuxRDTClosID("c") }, nil},
		{"memory policy", func(a *api.ContainerAdjustment) { a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_BIND, "0") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctr := richContainer()
			want := api.Clone(ctr)
			wantView := api.Clone(ctr)
			if tc.view != nil {
				tc.view(wantView)
				if proto.Equal(wantView, want) {
					t.Fatal("bad test: the expected view shows no change")
				}
			}
			c := merge.NewCreate(testPod(), ctr)
			if err := c.Apply("00-a", adjust(tc.adjust)); err != nil {
				t.Fatal(err)
			}
			checkMessage(t, "caller's container", ctr, want)
			checkMessage(t, "view", c.Container(), wantView)

			// A second plugin changing the same family changes the
			// Create's own copy; the input still stays as it was.
			if err := c.Apply("10-b", adjust(func(a *api.ContainerAdjustment) {
				a.AddEnv("SECOND", "1")
				a.AddAnnotation("second", "1")
				a.AddMount(&api.Mount{Destination: "/second"})
				a.AddDevice(&api.LinuxDevice{Path: "/dev/second"})
				a.AddRlimit("core", 1, 1)
				a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/second"}}})
				a.AddLinuxUnified("second", "1")
				a.SetLinuxSysctl("second", "1")
			})); err != nil {
				t.Fatal(err)
			}
			checkMessage(t, "caller's container after a second plugin", ctr, want)
		})
	}
}

// Two Creates from the same container do not see each other's changes,
// even where the container's lists have room to append in place.
func TestCreateViewsAreIndependent(t *testing.T) {
	ctr := richContainer()
	want := api.Clone(ctr)
	change := func(tag string, n uint64) func(a *api.ContainerAdjustment) {
		return func(a *api.ContainerAdjustment) {
			a.AddEnv("E", tag)
			a.RemoveEnv("KEEP")
			a.AddAnnotation("k", tag)
			a.AddMount(&api.Mount{Destination: "/m", Source: tag})
			a.RemoveMount("/data/v1")
			a.SetArgs([]string{tag})
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: tag}}})
			a.AddRlimit("nproc", n, n)
			a.AddDevice(&api.LinuxDevice{Path: "/dev/" + tag})
			a.SetLinuxMemoryLimit(int64(n))
			a.SetLinuxCPUSetCPUs(tag)
			a.AddLinuxHugepageLimit("2M", n)
			a.AddLinuxUnified("u", tag)
			a.SetLinuxCgroupsPath("/" + tag)
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "ipc", Path: tag})
			a.SetLinuxSysctl("s", tag)
			a.AddLinuxNetDevice("eth9", &api.LinuxNetDevice{Name: tag})
		}
	}
	expect := func(tag string, n uint64) *api.Container {
		v := api.Clone(want)
		v.Env = []string{"ORIG=2", "LAST=3", "E=" + tag, "LATER=" + tag}
		v.Annotations["k"] = tag
		v.Mounts = []*api.Mount{v.Mounts[0], {Destination: "/m", Source: tag}}
		v.Args = []string{tag}
		v.Hooks.Prestart = append(v.Hooks.Prestart, &api.Hook{Path: tag})
		v.Rlimits = append(v.Rlimits, &api.POSIXRlimit{Type: "nproc", Hard: n, Soft: n})
		l := v.Linux
		l.Devices = append(l.Devices, &api.LinuxDevice{Path: "/dev/" + tag})
		l.Resources.Memory.Limit = api.Int64(int64(n))
		l.Resources.Cpu.Cpus = tag
		l.Resources.HugepageLimits = append(l.Resources.HugepageLimits, &api.HugepageLimit{PageSize: "2M", Limit: n})
		l.Resources.Unified["u"] = tag
		l.CgroupsPath = "/" + tag
		l.Namespaces = append(l.Namespaces, &api.LinuxNamespace{Type: "ipc", Path: tag})
		l.Sysctl["s"] = tag
		l.NetDevices["eth9"] = &api.LinuxNetDevice{Name: tag}
		return v
	}
	later := func(tag string) *api.CreateContainerResponse {
		return adjust(func(a *api.ContainerAdjustment) { a.AddEnv("LATER", tag) })
	}

	one, two := merge.NewCreate(testPod(), ctr), merge.NewCreate(testPod(), ctr)
	if err := applyAll(t, one, "00-a", adjust(change("one", 1))); err != nil {
		t.Fatal(err)
	}
	if err := applyAll(t, two, "00-a", adjust(change("two", 2)), "10-b", later("two")); err != nil {
		t.Fatal(err)
	}
	if err := applyAll(t, one, "10-b", later("one")); err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "first view", one.Container(), expect("one", 1))
	checkMessage(t, "second view", two.Container(), expect("two", 2))
	checkMessage(t, "caller's container", ctr, want)
}

// The view starts as the container, every field of it (unknown fields
// included): a field added to Container must be added to the view's copy.
func TestCreateViewCopiesEveryField(t *testing.T) {
	ctr := &api.Container{}
	m := ctr.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			v := mp.NewValue()
			if fd.MapValue().Message() == nil {
				v = scalarValue(fd.MapValue())
			}
			mp.Set(scalarValue(fd.MapKey()).MapKey(), v)
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				l.Append(l.NewElement())
			} else {
				l.Append(scalarValue(fd))
			}
		case fd.Message() != nil:
			m.Set(fd, m.NewField(fd))
		default:
			m.Set(fd, scalarValue(fd))
		}
	}
	for i := range fields.Len() {
		if !m.Has(fields.Get(i)) {
			t.Fatalf("bad test: field %s not set", fields.Get(i).Name())
		}
	}
	m.SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7))
	want := api.Clone(ctr)

	c := merge.NewCreate(testPod(), ctr)
	if c.Container() == ctr {
		t.Fatal("the view is the caller's container")
	}
	checkMessage(t, "view", c.Container(), want)
	if err := c.Apply("00-a", adjust(func(a *api.ContainerAdjustment) { a.AddEnv("E", "1") })); err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "caller's container", ctr, want)
}

func scalarValue(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(7)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(7)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	}
	panic("unhandled kind " + fd.Kind().String())
}

// The view is copied on write: a plugin adding an environment variable
// copies the environment and shares the rest with the caller's container.
func TestCreateViewSharesUnchangedParts(t *testing.T) {
	ctr := richContainer()
	c := merge.NewCreate(testPod(), ctr)
	if err := c.Apply("00-a", adjust(func(a *api.ContainerAdjustment) { a.AddEnv("E", "1") })); err != nil {
		t.Fatal(err)
	}
	v := c.Container()
	if !slices.Equal(v.Env, append(slices.Clone(ctr.Env), "E=1")) {
		t.Fatalf("env %q", v.Env)
	}
	sameMap := func(a, b map[string]string) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	if !sameMap(v.Annotations, ctr.Annotations) || !sameMap(v.Labels, ctr.Labels) {
		t.Errorf("annotations or labels copied")
	}
	if &v.Mounts[0] != &ctr.Mounts[0] || &v.Rlimits[0] != &ctr.Rlimits[0] || &v.Args[0] != &ctr.Args[0] {
		t.Errorf("mounts, rlimits or args copied")
	}
	if v.Linux != ctr.Linux || v.Hooks != ctr.Hooks {
		t.Errorf("Linux part or hooks copied")
	}

	// A change to the mounts copies the list, not its entries; the rest
	// stays shared.
	if err := c.Apply("10-b", adjust(func(a *api.ContainerAdjustment) { a.RemoveMount("/data/v1") })); err != nil {
		t.Fatal(err)
	}
	if len(v.Mounts) != 1 || v.Mounts[0] != ctr.Mounts[0] || len(ctr.Mounts) != 2 {
		t.Errorf("mounts %v (caller's %v)", v.Mounts, ctr.Mounts)
	}
	if v.Linux != ctr.Linux || !maps.Equal(v.Annotations, ctr.Annotations) {
		t.Errorf("Linux part copied or annotations changed")
	}
}
