package merge_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
	"google.golang.org/protobuf/proto"
)

// subject builds the adjustment plugin makes for one field family (the
// scenarios of upstream's adaptation tests). remove makes the plugin
// remove the entry before setting it, where the family supports that.
func subject(name, plugin string, remove bool, view *api.Container) func(a *api.ContainerAdjustment) {
	return func(a *api.ContainerAdjustment) {
		switch name {
		case "annotation":
			if remove {
				a.RemoveAnnotation("key")
			}
			a.AddAnnotation("key", plugin)
		case "mount":
			if remove {
				a.RemoveMount("/mnt/test")
			}
			a.AddMount(&api.Mount{Source: "/dev/" + plugin, Destination: "/mnt/test"})
		case "environment":
			if remove {
				a.RemoveEnv("key")
			}
			a.AddEnv("key", plugin)
		case "arguments":
			if remove {
				a.UpdateArgs(append(slices.Clone(view.Args), "twice..."))
			} else {
				a.SetArgs([]string{"echo", "updated", "argument", "list"})
			}
		case "hooks":
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/" + plugin}}})
		case "device":
			if remove {
				a.RemoveDevice("/dev/test")
			}
			a.AddDevice(&api.LinuxDevice{Path: "/dev/test", Type: "c", Major: 313, Minor: minor(plugin)})
		case "namespace":
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "cgroup", Path: "/var/run/cgroupns/replaced"})
		case "rlimit":
			a.AddRlimit("nofile", 456, 123)
		case "CDI-device":
			a.AddCDIDevice(&api.CDIDevice{Name: "vendor0.com/dev=dev0"})
		case "I/O priority":
			a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 5})
		case "linux net device":
			if remove {
				a.RemoveLinuxNetDevice("hostIf")
			}
			a.AddLinuxNetDevice("hostIf", &api.LinuxNetDevice{Name: "containerIf"})
		case "linux scheduler":
			a.SetLinuxScheduler(&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10})
		case "linux sysctl":
			if remove {
				a.RemoveLinuxSysctl("net.core.somaxconn")
			}
			a.SetLinuxSysctl("net.core.somaxconn", "256")
		case "linux memory policy":
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_INTERLEAVE, "0,1", api.MpolFlag_MPOL_F_STATIC_NODES)
		case "resources/cpu":
			a.SetLinuxCPUShares(123)
			a.SetLinuxCPUQuota(456)
			a.SetLinuxCPUPeriod(789)
			a.SetLinuxCPURealtimeRuntime(321)
			a.SetLinuxCPURealtimePeriod(654)
			a.SetLinuxCPUSetCPUs("0-1")
			a.SetLinuxCPUSetMems("2-3")
		case "resources/mem":
			a.SetLinuxMemoryLimit(1234000)
			a.SetLinuxMemoryReservation(4000)
			a.SetLinuxMemorySwap(34000)
			a.SetLinuxMemoryKernel(30000)
			a.SetLinuxMemoryKernelTCP(2000)
			a.SetLinuxMemorySwappiness(987)
			a.SetLinuxMemoryDisableOomKiller()
			a.SetLinuxMemoryUseHierarchy()
		case "resources/classes":
			a.SetLinuxRDTClass(plugin)
			a.SetLinuxBlockIOClass(plugin)
		case "resources/hugepagelimits":
			a.AddLinuxHugepageLimit("1M", 4096)
			a.AddLinuxHugepageLimit("4M", 1024)
		case "resources/unified":
			a.AddLinuxUnified("resource.1", "value1")
			a.AddLinuxUnified("resource.2", "value2")
		case "resources/pids":
			a.SetLinuxPidLimits(64)
		case "cgroupspath":
			a.SetLinuxCgroupsPath("/" + plugin)
		case "oom score":
			score := 100
			a.SetLinuxOomScoreAdj(&score)
		case "seccomp":
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", ListenerPath: "/run/x.sock"})
		case "rdt":
			if remove {
				a.RemoveLinuxRDT()
			}
			_, name, _ := strings.Cut(plugin, "-")
			a.SetLinuxRDTClosID(name)
			a.SetLinuxRDTSchemata([]string{"L3:0=ff", "MB:0=50"})
			a.SetLinuxRDTEnableMonitoring(true)
		default:
			panic("unknown subject " + name)
		}
	}
}

func minor(plugin string) int64 {
	if strings.HasPrefix(plugin, "10-") {
		return 110
	}
	return 100
}

func linuxAdj(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

func resAdj(r *api.LinuxResources) *api.ContainerAdjustment {
	return linuxAdj(&api.LinuxContainerAdjustment{Resources: r})
}

func TestCreateSinglePlugin(t *testing.T) {
	for _, tc := range []struct {
		subject string
		want    *api.ContainerAdjustment
	}{
		{"annotation", &api.ContainerAdjustment{Annotations: map[string]string{"key": "00-test"}}},
		{"mount", &api.ContainerAdjustment{Mounts: []*api.Mount{{Source: "/dev/00-test", Destination: "/mnt/test"}}}},
		{"environment", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "key", Value: "00-test"}}}},
		{"arguments", &api.ContainerAdjustment{Args: []string{"echo", "updated", "argument", "list"}}},
		{"hooks", &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/bin/00-test"}}}}},
		{"device", linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/test", Type: "c", Major: 313, Minor: 100}}})},
		{"namespace", linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "cgroup", Path: "/var/run/cgroupns/replaced"}}})},
		{"rlimit", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "nofile", Soft: 123, Hard: 456}}}},
		{"CDI-device", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor0.com/dev=dev0"}}}},
		{"I/O priority", linuxAdj(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 5}})},
		{"linux net device", linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"hostIf": {Name: "containerIf"}}})},
		{"linux scheduler", linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10}})},
		{"linux sysctl", linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.core.somaxconn": "256"}})},
		{"linux memory policy", linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{
			Mode: api.MpolMode_MPOL_INTERLEAVE, Nodes: "0,1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES}}})},
		{"resources/cpu", resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{
			Shares: api.UInt64(123), Quota: api.Int64(456), Period: api.UInt64(789),
			RealtimeRuntime: api.Int64(321), RealtimePeriod: api.UInt64(654), Cpus: "0-1", Mems: "2-3"}})},
		{"resources/mem", resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{
			Limit: api.Int64(1234000), Reservation: api.Int64(4000), Swap: api.Int64(34000), Kernel: api.Int64(30000),
			KernelTcp: api.Int64(2000), Swappiness: api.UInt64(987), DisableOomKiller: api.Bool(true), UseHierarchy: api.Bool(true)}})},
		{"resources/classes", resAdj(&api.LinuxResources{RdtClass: api.String("00-test"), BlockioClass: api.String("00-test")})},
		{"resources/hugepagelimits", resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "1M", Limit: 4096}, {PageSize: "4M", Limit: 1024}}})},
		{"resources/unified", resAdj(&api.LinuxResources{Unified: map[string]string{"resource.1": "value1", "resource.2": "value2"}})},
		{"resources/pids", resAdj(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 64}})},
		{"cgroupspath", linuxAdj(&api.LinuxContainerAdjustment{CgroupsPath: "/00-test"})},
		{"oom score", linuxAdj(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: 100}})},
		{"seccomp", linuxAdj(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW", ListenerPath: "/run/x.sock"}})},
		{"rdt", linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
			ClosId: api.String("test"), Schemata: api.RepeatedString([]string{"L3:0=ff", "MB:0=50"}), EnableMonitoring: api.Bool(true)}})},
	} {
		t.Run(tc.subject, func(t *testing.T) {
			c := merge.NewCreate(testPod(), testContainer())
			if err := c.Apply("00-test", adjust(subject(tc.subject, "00-test", false, c.Container()))); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			checkMessage(t, "adjustment", c.Adjustment(), tc.want)
		})
	}
}

// Two plugins, "00-bar" then "10-foo", make the same kind of adjustment;
// with remove, "10-foo" removes the entry first.
func TestCreateTwoPlugins(t *testing.T) {
	for _, tc := range []struct {
		subject  string
		remove   bool
		conflict *merge.ConflictError // nil: no conflict, want is the result
		want     *api.ContainerAdjustment
	}{
		{"annotation", false, &merge.ConflictError{Field: api.Field_Annotations, Key: "key"}, nil},
		{"annotation", true, nil, &api.ContainerAdjustment{Annotations: map[string]string{"-key": "", "key": "10-foo"}}},
		{"mount", false, &merge.ConflictError{Field: api.Field_Mounts, Key: "/mnt/test"}, nil},
		{"mount", true, nil, &api.ContainerAdjustment{Mounts: []*api.Mount{{Source: "/dev/10-foo", Destination: "/mnt/test"}}}},
		{"environment", false, &merge.ConflictError{Field: api.Field_Env, Key: "key"}, nil},
		{"environment", true, nil, &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "key", Value: "10-foo"}}}},
		{"arguments", false, &merge.ConflictError{Field: api.Field_Args}, nil},
		{"arguments", true, nil, &api.ContainerAdjustment{Args: []string{"echo", "updated", "argument", "list", "twice..."}}},
		{"hooks", false, nil, &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/bin/00-bar"}, {Path: "/bin/10-foo"}}}}},
		{"device", false, &merge.ConflictError{Field: api.Field_Devices, Key: "/dev/test"}, nil},
		{"device", true, nil, linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/test", Type: "c", Major: 313, Minor: 110}}})},
		{"linux net device", false, &merge.ConflictError{Field: api.Field_LinuxNetDevices, Key: "hostIf"}, nil},
		{"linux net device", true, nil, linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-hostIf": nil, "hostIf": {Name: "containerIf"}}})},
		{"linux sysctl", false, &merge.ConflictError{Field: api.Field_Sysctl, Key: "net.core.somaxconn"}, nil},
		{"linux sysctl", true, nil, linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"-net.core.somaxconn": "", "net.core.somaxconn": "256"}})},
		{"rdt", false, &merge.ConflictError{Field: api.Field_RdtClosID}, nil},
		{"rdt", true, nil, linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
			ClosId: api.String("foo"), Schemata: api.RepeatedString([]string{"L3:0=ff", "MB:0=50"}), EnableMonitoring: api.Bool(true)}})},
		{"namespace", false, &merge.ConflictError{Field: api.Field_Namespace, Key: "cgroup"}, nil},
		{"rlimit", false, &merge.ConflictError{Field: api.Field_Rlimits, Key: "nofile"}, nil},
		{"CDI-device", false, &merge.ConflictError{Field: api.Field_CdiDevices, Key: "vendor0.com/dev=dev0"}, nil},
		{"I/O priority", false, &merge.ConflictError{Field: api.Field_IoPriority}, nil},
		{"linux scheduler", false, &merge.ConflictError{Field: api.Field_LinuxSched}, nil},
		{"linux memory policy", false, &merge.ConflictError{Field: api.Field_MemoryPolicy}, nil},
		{"resources/cpu", false, &merge.ConflictError{Field: api.Field_CPUShares}, nil},
		{"resources/mem", false, &merge.ConflictError{Field: api.Field_MemLimit}, nil},
		{"resources/classes", false, &merge.ConflictError{Field: api.Field_BlockioClass}, nil},
		{"resources/hugepagelimits", false, &merge.ConflictError{Field: api.Field_HugepageLimits, Key: "1M"}, nil},
		{"resources/unified", false, &merge.ConflictError{Field: api.Field_CgroupsUnified, Key: "resource.1"}, nil},
		{"resources/pids", false, &merge.ConflictError{Field: api.Field_PidsLimit}, nil},
		{"cgroupspath", false, &merge.ConflictError{Field: api.Field_CgroupsPath}, nil},
		{"oom score", false, &merge.ConflictError{Field: api.Field_OomScoreAdj}, nil},
		{"seccomp", false, &merge.ConflictError{Field: api.Field_SeccompPolicy}, nil},
	} {
		name := tc.subject
		if tc.remove {
			name += "/remove"
		}
		t.Run(name, func(t *testing.T) {
			c := merge.NewCreate(testPod(), testContainer())
			if err := c.Apply("00-bar", adjust(subject(tc.subject, "00-bar", false, c.Container()))); err != nil {
				t.Fatalf("Apply 00-bar: %v", err)
			}
			err := c.Apply("10-foo", adjust(subject(tc.subject, "10-foo", tc.remove, c.Container())))
			if tc.conflict != nil {
				want := *tc.conflict
				want.ContainerID, want.Container, want.Plugins = "ctr0", "default/pod0/ctr0", [2]string{"00-bar", "10-foo"}
				checkConflict(t, err, want)
				return
			}
			if err != nil {
				t.Fatalf("Apply 10-foo: %v", err)
			}
			checkMessage(t, "adjustment", c.Adjustment(), tc.want)
		})
	}
}

func TestConflictErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  merge.ConflictError
		want string
	}{
		{merge.ConflictError{ContainerID: "c1", Field: api.Field_Env, Key: "FOO", Plugins: [2]string{"10-a", "20-b"}},
			`plugins "10-a" and "20-b" both adjust env "FOO" of container "c1"`},
		{merge.ConflictError{ContainerID: "c1", Field: api.Field_MemLimit, Plugins: [2]string{"10-a", "20-b"}},
			`plugins "10-a" and "20-b" both adjust memory limit of container "c1"`},
		{merge.ConflictError{ContainerID: "c2", Field: api.Field_Mounts, Key: "/mnt", Plugins: [2]string{"05-x", "06-y"}},
			`plugins "05-x" and "06-y" both adjust mount "/mnt" of container "c2"`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	for f := range api.Field_name {
		if name := merge.FieldName(api.Field(f)); name == "" || (f != 0 && name == api.Field(f).String()) {
			t.Errorf("field %v has no human-readable name (%q)", api.Field(f), name)
		}
	}
}

// Removal markers as they reach the runtime: which families pass on a
// removal the plugin does not follow with a value (upstream's behaviour).
func TestCreateRemovalMarkers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(a *api.ContainerAdjustment)
		want  *api.ContainerAdjustment
	}{
		{"annotation", func(a *api.ContainerAdjustment) { a.RemoveAnnotation("orig") },
			&api.ContainerAdjustment{Annotations: map[string]string{"-orig": ""}}},
		{"sysctl", func(a *api.ContainerAdjustment) { a.RemoveLinuxSysctl("kernel.x") },
			linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"-kernel.x": ""}})},
		{"net device", func(a *api.ContainerAdjustment) { a.RemoveLinuxNetDevice("eth1") },
			linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-eth1": nil}})},
		{"mount", func(a *api.ContainerAdjustment) {
			a.RemoveMount("/remove/test/destination")
			a.RemoveMount("/remove/test/destination")
		}, &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/remove/test/destination"}}}},
		{"namespace", func(a *api.ContainerAdjustment) { a.RemoveNamespace(&api.LinuxNamespace{Type: "cgroup"}) },
			linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-cgroup"}}})},
		// Upstream passes no removal-only environment variables or devices on.
		{"env", func(a *api.ContainerAdjustment) { a.RemoveEnv("ORIG") }, &api.ContainerAdjustment{}},
		{"device", func(a *api.ContainerAdjustment) { a.RemoveDevice("/dev/orig") }, &api.ContainerAdjustment{}},
		{"rdt", func(a *api.ContainerAdjustment) { a.RemoveLinuxRDT() },
			linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}})},
		{"args takeover without args", func(a *api.ContainerAdjustment) { a.UpdateArgs(nil) },
			&api.ContainerAdjustment{Args: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := merge.NewCreate(testPod(), testContainer())
			if err := c.Apply("00-a", adjust(tc.build)); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			checkMessage(t, "adjustment", c.Adjustment(), tc.want)
		})
	}
}

// A plugin that removes an entry another plugin added drops it and becomes
// its owner: a third plugin touching it conflicts with the remover, while
// the remover itself may set it.
func TestCreateRemovalTakesOwnership(t *testing.T) {
	for _, tc := range []struct {
		name   string
		field  api.Field
		key    string
		add    func(a *api.ContainerAdjustment, plugin string)
		remove func(a *api.ContainerAdjustment)
		// after the removal, without a re-add
		wantAfterRemoval *api.ContainerAdjustment
	}{
		{"mount", api.Field_Mounts, "/m",
			func(a *api.ContainerAdjustment, p string) { a.AddMount(&api.Mount{Destination: "/m", Source: p}) },
			func(a *api.ContainerAdjustment) { a.RemoveMount("/m") },
			&api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/m"}}}},
		{"env", api.Field_Env, "E",
			func(a *api.ContainerAdjustment, p string) { a.AddEnv("E", p) },
			func(a *api.ContainerAdjustment) { a.RemoveEnv("E") },
			&api.ContainerAdjustment{}},
		{"device", api.Field_Devices, "/dev/d",
			func(a *api.ContainerAdjustment, p string) { a.AddDevice(&api.LinuxDevice{Path: "/dev/d", Type: p}) },
			func(a *api.ContainerAdjustment) { a.RemoveDevice("/dev/d") },
			linuxAdj(&api.LinuxContainerAdjustment{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := merge.NewCreate(testPod(), testContainer())
			if err := c.Apply("00-a", adjust(func(a *api.ContainerAdjustment) { tc.add(a, "00-a") })); err != nil {
				t.Fatal(err)
			}
			if err := c.Apply("10-b", adjust(tc.remove)); err != nil {
				t.Fatal(err)
			}
			checkMessage(t, "after removal", c.Adjustment(), tc.wantAfterRemoval)
			if owner, _ := c.Owners().CompoundOwner("ctr0", tc.field, tc.key); owner != "-10-b" {
				t.Errorf("owner after removal = %q, want -10-b", owner)
			}
			err := c.Apply("20-c", adjust(func(a *api.ContainerAdjustment) { tc.add(a, "20-c") }))
			checkConflict(t, err, merge.ConflictError{ContainerID: "ctr0", Container: "default/pod0/ctr0", Field: tc.field, Key: tc.key, Plugins: [2]string{"10-b", "20-c"}})
		})
	}
}

// Map-like families change ownership only when a plugin removes and sets
// the same key; a bare removal leaves the earlier owner in place.
func TestCreateMapRemovalOwnership(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	if err := c.Apply("00-a", adjust(func(a *api.ContainerAdjustment) { a.AddAnnotation("k", "a") })); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("10-b", adjust(func(a *api.ContainerAdjustment) { a.RemoveAnnotation("k") })); err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "adjustment", c.Adjustment(), &api.ContainerAdjustment{Annotations: map[string]string{"k": "a", "-k": ""}})
	err := c.Apply("20-c", adjust(func(a *api.ContainerAdjustment) { a.AddAnnotation("k", "c") }))
	checkConflict(t, err, merge.ConflictError{ContainerID: "ctr0", Container: "default/pod0/ctr0", Field: api.Field_Annotations, Key: "k", Plugins: [2]string{"00-a", "20-c"}})
}

// The same plugin never conflicts with itself.
func TestCreateSamePluginRepeats(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	err := c.Apply("00-a", adjust(func(a *api.ContainerAdjustment) {
		a.AddMount(&api.Mount{Destination: "/m", Source: "1"})
		a.AddMount(&api.Mount{Destination: "/m", Source: "2"})
		a.AddLinuxHugepageLimit("2M", 1)
		a.AddLinuxHugepageLimit("2M", 2)
	}))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if n := len(c.Adjustment().Mounts); n != 2 {
		t.Errorf("got %d mounts, want 2", n)
	}
}

func TestCreateOwners(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	err := applyAll(t, c,
		"00-a", adjust(func(a *api.ContainerAdjustment) {
			a.AddEnv("A", "1")
			a.AddMount(&api.Mount{Destination: "/m"})
			a.SetLinuxMemoryLimit(100)
			a.AddHooks(&api.Hooks{Poststop: []*api.Hook{{Path: "/h"}}})
			a.AddLinuxHugepageLimit("2M", 1)
			a.AddLinuxUnified("memory.high", "1")
		}),
		"10-b", adjust(func(a *api.ContainerAdjustment) {
			a.RemoveMount("/m")
			a.UpdateArgs([]string{"x"})
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/h"}}})
			a.RemoveLinuxRDT()
			a.SetLinuxRDTClosID("gold")
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network"})
			a.RemoveNamespace(&api.LinuxNamespace{Type: "ipc"})
			a.SetLinuxSysctl("s", "1")
			a.AddCDIDevice(&api.CDIDevice{Name: "v/d=0"})
			a.AddRlimit("nofile", 1, 1)
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	simple := func(f api.Field) int32 { return f.Key() }
	compound := func(m map[string]string) *api.CompoundFieldOwners { return &api.CompoundFieldOwners{Owners: m} }
	want := &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"ctr0": {
		Simple: map[int32]string{
			simple(api.Field_MemLimit):            "00-a",
			simple(api.Field_OciHooks):            "00-a,10-b",
			simple(api.Field_Args):                "10-b",
			simple(api.Field_RdtClosID):           "10-b",
			simple(api.Field_RdtSchemata):         "-10-b",
			simple(api.Field_RdtEnableMonitoring): "-10-b",
		},
		Compound: map[int32]*api.CompoundFieldOwners{
			simple(api.Field_Env):            compound(map[string]string{"A": "00-a"}),
			simple(api.Field_Mounts):         compound(map[string]string{"/m": "-10-b"}),
			simple(api.Field_HugepageLimits): compound(map[string]string{"2M": "00-a"}),
			simple(api.Field_CgroupsUnified): compound(map[string]string{"memory.high": "00-a"}),
			simple(api.Field_Namespace):      compound(map[string]string{"network": "10-b", "ipc": "10-b"}),
			simple(api.Field_Sysctl):         compound(map[string]string{"s": "10-b"}),
			simple(api.Field_CdiDevices):     compound(map[string]string{"v/d=0": "10-b"}),
			simple(api.Field_Rlimits):        compound(map[string]string{"nofile": "10-b"}),
		},
	}}}
	checkMessage(t, "owners", c.Owners(), want)
	if owners, _ := c.Owners().HooksOwner("ctr0"); owners != "00-a,10-b" {
		t.Errorf("HooksOwner = %q", owners)
	}
}

// The next plugin sees the container with earlier plugins' changes; the
// caller's container is left alone.
func TestCreateContainerView(t *testing.T) {
	orig := testContainer()
	orig.Linux.Namespaces = append(orig.Linux.Namespaces, &api.LinuxNamespace{Type: "ipc", Path: "/ipc"})
	keep := proto.Clone(orig)
	c := merge.NewCreate(testPod(), orig)
	err := applyAll(t, c,
		"00-a", adjust(func(a *api.ContainerAdjustment) {
			a.AddEnv("ORIG", "replaced")
			a.AddEnv("NEW", "x")
			a.RemoveEnv("KEEP")
			a.RemoveMount("/remove/test/destination")
			a.AddMount(&api.Mount{Destination: "/new"})
			a.AddAnnotation("ann", "v")
			a.RemoveAnnotation("orig")
			a.SetArgs([]string{"sleep", "1"})
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/h"}}})
			a.RemoveDevice("/dev/orig")
			a.AddDevice(&api.LinuxDevice{Path: "/dev/new"})
			a.SetLinuxMemoryLimit(42)
			a.SetLinuxCPUSetCPUs("1")
			a.AddLinuxHugepageLimit("2M", 8)
			a.AddLinuxUnified("u", "1")
			a.SetLinuxPidLimits(9)
			a.SetLinuxBlockIOClass("io")
			a.SetLinuxCgroupsPath("/cg")
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "cgroup", Path: "/replaced"})
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/netns"})
			a.SetLinuxSysctl("s", "1")
			a.AddLinuxNetDevice("eth1", &api.LinuxNetDevice{Name: "net1"})
			a.AddRlimit("nofile", 2, 1)
			// not reflected in the view:
			a.AddCDIDevice(&api.CDIDevice{Name: "v/d=0"})
			a.SetLinuxRDTClosID("gold")
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_BIND, "0")
		}),
		"10-b", adjust(func(a *api.ContainerAdjustment) {
			a.RemoveNamespace(&api.LinuxNamespace{Type: "ipc"})
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := &api.Container{
		Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0",
		Args:        []string{"sleep", "1"},
		Env:         []string{"ORIG=replaced", "NEW=x"},
		Annotations: map[string]string{"orig": "a", "ann": "v"}, // a bare removal is not reflected (upstream)
		Mounts:      []*api.Mount{{Destination: "/new"}},
		Hooks:       &api.Hooks{Prestart: []*api.Hook{{Path: "/h"}}},
		Rlimits:     []*api.POSIXRlimit{{Type: "nofile", Hard: 2, Soft: 1}},
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{{Type: "cgroup", Path: "/replaced"}, {Type: "network", Path: "/netns"}},
			Devices:    []*api.LinuxDevice{{Path: "/dev/new"}},
			Resources: &api.LinuxResources{
				Memory:         &api.LinuxMemory{Limit: api.Int64(42)},
				Cpu:            &api.LinuxCPU{Shares: api.UInt64(111), Cpus: "1"},
				HugepageLimits: []*api.HugepageLimit{{PageSize: "2M", Limit: 8}},
				Unified:        map[string]string{"u": "1"},
				Pids:           &api.LinuxPids{Limit: 9},
				BlockioClass:   api.String("io"),
			},
			CgroupsPath: "/cg",
			Sysctl:      map[string]string{"s": "1"},
			NetDevices:  map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}},
		},
	}
	checkMessage(t, "container view", c.Container(), want)
	checkMessage(t, "caller's container", orig, keep)
}

// A rejected answer leaves the merger exactly as it was.
func TestCreateApplyIsAtomic(t *testing.T) {
	c := merge.NewCreate(testPod(), testContainer())
	first := adjust(func(a *api.ContainerAdjustment) {
		a.AddMount(&api.Mount{Destination: "/m"})
		a.SetLinuxCPUShares(1)
	})
	first.Update = []*api.ContainerUpdate{update("other", func(u *api.ContainerUpdate) { u.SetLinuxMemoryLimit(1) })}
	if err := c.Apply("00-a", first); err != nil {
		t.Fatal(err)
	}
	adj, ctr, owners := proto.Clone(c.Adjustment()), proto.Clone(c.Container()), proto.Clone(c.Owners())
	upd := proto.Clone(c.Updates()[0])

	second := adjust(func(a *api.ContainerAdjustment) {
		a.AddEnv("E", "1")
		a.AddAnnotation("k", "v")
		a.SetArgs([]string{"x"})
		a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/h"}}})
		a.SetLinuxMemoryLimit(5)
		a.AddMount(&api.Mount{Destination: "/m"}) // conflicts
	})
	second.Update = []*api.ContainerUpdate{update("other", func(u *api.ContainerUpdate) { u.SetLinuxCPUShares(2) })}
	second.Evict = []*api.ContainerEviction{{ContainerId: "victim"}}
	err := c.Apply("10-b", second)
	checkConflict(t, err, merge.ConflictError{ContainerID: "ctr0", Container: "default/pod0/ctr0", Field: api.Field_Mounts, Key: "/m", Plugins: [2]string{"00-a", "10-b"}})

	checkMessage(t, "adjustment", c.Adjustment(), adj)
	checkMessage(t, "container", c.Container(), ctr)
	checkMessage(t, "owners", c.Owners(), owners)
	checkList(t, "updates", c.Updates(), []*api.ContainerUpdate{upd.(*api.ContainerUpdate)})
	if n := len(c.Evictions()); n != 0 {
		t.Errorf("evictions of a rejected answer recorded: %v", c.Evictions())
	}
}

func TestCreateNilInputs(t *testing.T) {
	c := merge.NewCreate(nil, nil)
	if err := c.Apply("00-a", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("00-a", &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
		Mounts: []*api.Mount{nil}, Env: []*api.KeyValue{nil}, Rlimits: []*api.POSIXRlimit{nil},
		CDIDevices: []*api.CDIDevice{nil}, Hooks: &api.Hooks{},
		Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{nil}, Devices: []*api.LinuxDevice{nil},
			Resources: &api.LinuxResources{HugepageLimits: []*api.HugepageLimit{nil}}},
	}}); err != nil {
		t.Fatal(err)
	}
	checkMessage(t, "adjustment", c.Adjustment(), &api.ContainerAdjustment{})
	checkMessage(t, "owners", c.Owners(), &api.OwningPlugins{})
}
