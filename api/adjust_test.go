package api_test

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

func checkMessage(t *testing.T, name string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s:\n got: %s\nwant: %s", name, prototext.Format(got), prototext.Format(want))
	}
}

func TestAdjustmentBuilders(t *testing.T) {
	oom := 500
	for _, tc := range []struct {
		name  string
		build func(a *api.ContainerAdjustment)
		want  *api.ContainerAdjustment
	}{
		{"annotations", func(a *api.ContainerAdjustment) {
			a.AddAnnotation("a", "1")
			a.RemoveAnnotation("b")
		}, &api.ContainerAdjustment{Annotations: map[string]string{"a": "1", "-b": ""}}},
		{"mounts", func(a *api.ContainerAdjustment) {
			a.AddMount(&api.Mount{Destination: "/m", Source: "/s", Type: "bind", Options: []string{"ro"}})
			a.RemoveMount("/old")
			a.AddMount(nil)
		}, &api.ContainerAdjustment{Mounts: []*api.Mount{
			{Destination: "/m", Source: "/s", Type: "bind", Options: []string{"ro"}},
			{Destination: "-/old"},
		}}},
		{"env", func(a *api.ContainerAdjustment) {
			a.AddEnv("A", "1")
			a.RemoveEnv("B")
		}, &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "1"}, {Key: "-B"}}}},
		{"set args", func(a *api.ContainerAdjustment) { a.SetArgs([]string{"sh", "-c", "true"}) },
			&api.ContainerAdjustment{Args: []string{"sh", "-c", "true"}}},
		{"update args", func(a *api.ContainerAdjustment) { a.UpdateArgs([]string{"sh"}) },
			&api.ContainerAdjustment{Args: []string{"", "sh"}}},
		{"hooks accumulate", func(a *api.ContainerAdjustment) {
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/p1"}}, Poststop: []*api.Hook{{Path: "/s"}}})
			a.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/p2"}}, CreateRuntime: []*api.Hook{{Path: "/cr"}},
				CreateContainer: []*api.Hook{{Path: "/cc"}}, StartContainer: []*api.Hook{{Path: "/sc"}},
				Poststart: []*api.Hook{{Path: "/ps"}}})
			a.AddHooks(nil)
		}, &api.ContainerAdjustment{Hooks: &api.Hooks{
			Prestart:        []*api.Hook{{Path: "/p1"}, {Path: "/p2"}},
			CreateRuntime:   []*api.Hook{{Path: "/cr"}},
			CreateContainer: []*api.Hook{{Path: "/cc"}},
			StartContainer:  []*api.Hook{{Path: "/sc"}},
			Poststart:       []*api.Hook{{Path: "/ps"}},
			Poststop:        []*api.Hook{{Path: "/s"}},
		}}},
		{"rlimits", func(a *api.ContainerAdjustment) { a.AddRlimit("RLIMIT_NOFILE", 456, 123) },
			&api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 456, Soft: 123}}}},
		{"CDI devices", func(a *api.ContainerAdjustment) {
			a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/dev=0"})
			a.AddCDIDevice(nil)
		}, &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/dev=0"}}}},
		{"devices", func(a *api.ContainerAdjustment) {
			a.AddDevice(&api.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 3})
			a.RemoveDevice("/dev/y")
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{
			{Path: "/dev/x", Type: "c", Major: 1, Minor: 3}, {Path: "-/dev/y"},
		}}}},
		{"namespaces", func(a *api.ContainerAdjustment) {
			a.AddOrReplaceNamespace(&api.LinuxNamespace{Type: "network", Path: "/var/run/netns/x"})
			a.RemoveNamespace(&api.LinuxNamespace{Type: "ipc"})
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{
			{Type: "network", Path: "/var/run/netns/x"}, {Type: "-ipc"},
		}}}},
		{"sysctl", func(a *api.ContainerAdjustment) {
			a.SetLinuxSysctl("net.core.somaxconn", "256")
			a.RemoveLinuxSysctl("kernel.x")
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Sysctl: map[string]string{
			"net.core.somaxconn": "256", "-kernel.x": "",
		}}}},
		{"net devices", func(a *api.ContainerAdjustment) {
			a.AddLinuxNetDevice("eth1", &api.LinuxNetDevice{Name: "net1"})
			a.RemoveLinuxNetDevice("eth2")
			a.AddLinuxNetDevice("eth3", nil)
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{
			"eth1": {Name: "net1"}, "-eth2": nil,
		}}}},
		{"linux simple", func(a *api.ContainerAdjustment) {
			a.SetLinuxCgroupsPath("/kubepods/x")
			a.SetLinuxOomScoreAdj(&oom)
			a.SetLinuxIOPriority(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 5})
			a.SetLinuxSeccompPolicy(&api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"})
			a.SetLinuxScheduler(&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10})
			a.SetLinuxMemoryPolicy(api.MpolMode_MPOL_INTERLEAVE, "0,1", api.MpolFlag_MPOL_F_STATIC_NODES)
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{
			CgroupsPath:   "/kubepods/x",
			OomScoreAdj:   &api.OptionalInt{Value: 500},
			IoPriority:    &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT, Priority: 5},
			SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"},
			Scheduler:     &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 10},
			MemoryPolicy: &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_INTERLEAVE, Nodes: "0,1",
				Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES}},
		}}},
		{"nil OOM score", func(a *api.ContainerAdjustment) { a.SetLinuxOomScoreAdj(nil) },
			&api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{}}},
		{"rdt", func(a *api.ContainerAdjustment) {
			a.RemoveLinuxRDT()
			a.SetLinuxRDTClosID("gold")
			a.SetLinuxRDTSchemata([]string{"L3:0=ff"})
			a.SetLinuxRDTEnableMonitoring(true)
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
			Remove: true, ClosId: &api.OptionalString{Value: "gold"},
			Schemata: &api.OptionalRepeatedString{Value: []string{"L3:0=ff"}}, EnableMonitoring: &api.OptionalBool{Value: true},
		}}}},
		{"memory", func(a *api.ContainerAdjustment) {
			a.SetLinuxMemoryLimit(1000)
			a.SetLinuxMemoryReservation(900)
			a.SetLinuxMemorySwap(2000)
			a.SetLinuxMemoryKernel(300)
			a.SetLinuxMemoryKernelTCP(200)
			a.SetLinuxMemorySwappiness(60)
			a.SetLinuxMemoryDisableOomKiller()
			a.SetLinuxMemoryUseHierarchy()
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{
			Memory: &api.LinuxMemory{
				Limit: &api.OptionalInt64{Value: 1000}, Reservation: &api.OptionalInt64{Value: 900},
				Swap: &api.OptionalInt64{Value: 2000}, Kernel: &api.OptionalInt64{Value: 300},
				KernelTcp: &api.OptionalInt64{Value: 200}, Swappiness: &api.OptionalUInt64{Value: 60},
				DisableOomKiller: &api.OptionalBool{Value: true}, UseHierarchy: &api.OptionalBool{Value: true},
			}}}}},
		{"cpu", func(a *api.ContainerAdjustment) {
			a.SetLinuxCPUShares(512)
			a.SetLinuxCPUQuota(50000)
			a.SetLinuxCPUPeriod(100000)
			a.SetLinuxCPURealtimeRuntime(1000)
			a.SetLinuxCPURealtimePeriod(2000)
			a.SetLinuxCPUSetCPUs("0-3")
			a.SetLinuxCPUSetMems("0")
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{
			Cpu: &api.LinuxCPU{
				Shares: &api.OptionalUInt64{Value: 512}, Quota: &api.OptionalInt64{Value: 50000},
				Period: &api.OptionalUInt64{Value: 100000}, RealtimeRuntime: &api.OptionalInt64{Value: 1000},
				RealtimePeriod: &api.OptionalUInt64{Value: 2000}, Cpus: "0-3", Mems: "0",
			}}}}},
		{"other resources", func(a *api.ContainerAdjustment) {
			a.SetLinuxPidLimits(100)
			a.AddLinuxHugepageLimit("2MB", 4096)
			a.AddLinuxHugepageLimit("1GB", 0)
			a.SetLinuxBlockIOClass("slow")
			a.SetLinuxRDTClass("gold")
			a.AddLinuxUnified("memory.high", "1G")
		}, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{
			Pids:           &api.LinuxPids{Limit: 100},
			HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4096}, {PageSize: "1GB"}},
			BlockioClass:   &api.OptionalString{Value: "slow"},
			RdtClass:       &api.OptionalString{Value: "gold"},
			Unified:        map[string]string{"memory.high": "1G"},
		}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &api.ContainerAdjustment{}
			tc.build(a)
			checkMessage(t, tc.name, a, tc.want)
		})
	}
}

// Builders copy what they are given, so the caller may reuse its values.
func TestAdjustmentBuildersCopy(t *testing.T) {
	a := &api.ContainerAdjustment{}
	m := &api.Mount{Destination: "/m", Options: []string{"ro"}}
	d := &api.LinuxDevice{Path: "/dev/x"}
	h := &api.Hooks{Prestart: []*api.Hook{{Path: "/p"}}}
	args := []string{"a"}
	a.AddMount(m)
	a.AddDevice(d)
	a.AddHooks(h)
	a.SetArgs(args)
	m.Options[0], d.Path, h.Prestart[0].Path, args[0] = "rw", "/dev/y", "/q", "b"
	want := &api.ContainerAdjustment{
		Mounts: []*api.Mount{{Destination: "/m", Options: []string{"ro"}}},
		Hooks:  &api.Hooks{Prestart: []*api.Hook{{Path: "/p"}}},
		Args:   []string{"a"},
		Linux:  &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/x"}}},
	}
	checkMessage(t, "after modifying inputs", a, want)
}
