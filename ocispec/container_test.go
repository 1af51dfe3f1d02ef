//lint:file-ignore SA1019 the protocol still carries prestart hooks and kernel memory limits

package ocispec

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// richSpec returns a spec that sets every field a plugin can adjust, with
// device cgroup rules exactly those Apply derives from its devices.
func richSpec() *rspec.Spec {
	return &rspec.Spec{
		Annotations: map[string]string{"io.example/a": "1", CDIAnnotationKey: "vendor.com/gpu=0"},
		Process: &rspec.Process{
			User:        rspec.User{UID: 1000, GID: 2000, AdditionalGids: []uint32{3000, 3001}},
			Args:        []string{"/bin/app", "--flag"},
			Env:         []string{"PATH=/bin", "EMPTY=", "EQ=a=b"},
			Rlimits:     []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512}},
			OOMScoreAdj: ptr(-500),
			Scheduler:   &rspec.Scheduler{Policy: rspec.SchedRR, Priority: 10, Flags: []rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork}},
			IOPriority:  &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_IDLE, Priority: 7},
		},
		Mounts: []rspec.Mount{
			{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "ro"}},
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/data/cache", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m"}},
		},
		Hooks: &rspec.Hooks{
			Prestart:        []rspec.Hook{{Path: "/hooks/pre", Args: []string{"pre"}}},
			CreateRuntime:   []rspec.Hook{{Path: "/hooks/cr", Timeout: ptr(3)}},
			CreateContainer: []rspec.Hook{{Path: "/hooks/cc", Env: []string{"X=1"}}},
			StartContainer:  []rspec.Hook{{Path: "/hooks/sc"}},
			Poststart:       []rspec.Hook{{Path: "/hooks/post"}},
			Poststop:        []rspec.Hook{{Path: "/hooks/stop"}},
		},
		Linux: &rspec.Linux{
			Namespaces: []rspec.LinuxNamespace{{Type: rspec.PIDNamespace}, {Type: rspec.NetworkNamespace, Path: "/run/netns/n1"}},
			Devices: []rspec.LinuxDevice{
				{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229, FileMode: ptr(os.FileMode(0o666)), UID: ptr(uint32(0)), GID: ptr(uint32(0))},
				{Path: "/dev/loop0", Type: "b", Major: 7},
			},
			Resources: &rspec.LinuxResources{
				Devices: []rspec.LinuxDeviceCgroup{
					{Allow: true, Type: "c", Major: ptr(int64(10)), Minor: ptr(int64(229)), Access: "rw"},
					{Allow: true, Type: "b", Major: ptr(int64(7)), Minor: ptr(int64(0)), Access: "rwm"},
				},
				Memory: &rspec.LinuxMemory{Limit: ptr(int64(1 << 30)), Swap: ptr(int64(2 << 30)), Reservation: ptr(int64(1 << 20)), Swappiness: ptr(uint64(0))},
				CPU: &rspec.LinuxCPU{Shares: ptr(uint64(512)), Quota: ptr(int64(20000)), Period: ptr(uint64(100000)),
					RealtimeRuntime: ptr(int64(0)), RealtimePeriod: ptr(uint64(0)), Cpus: "0-1", Mems: "0"},
				Pids:           &rspec.LinuxPids{Limit: ptr(int64(256))},
				HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1 << 21}},
				Unified:        map[string]string{"memory.high": "max"},
			},
			CgroupsPath: "/kubepods/pod1/c1",
			Sysctl:      map[string]string{"net.ipv4.ip_forward": "1"},
			NetDevices:  map[string]rspec.LinuxNetDevice{"eth1": {Name: "net1"}},
			Seccomp: &rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno, DefaultErrnoRet: ptr(uint(1)), Architectures: []rspec.Arch{rspec.ArchAARCH64},
				Syscalls: []rspec.LinuxSyscall{{Names: []string{"read"}, Action: rspec.ActAllow, Args: []rspec.LinuxSeccompArg{{Index: 0, Value: 1, Op: rspec.OpEqualTo}}}}},
			IntelRdt: &rspec.LinuxIntelRdt{ClosID: "gold", Schemata: []string{"L3:0=ff"}, EnableMonitoring: true},
		},
	}
}

// adjustmentFrom builds the adjustment that recreates a container's
// adjustable fields, as a plugin would.
func adjustmentFrom(c *api.Container) *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{
		Annotations: c.Annotations, Mounts: c.Mounts, Hooks: c.Hooks, Rlimits: c.Rlimits, CDIDevices: c.CDIDevices, Args: c.Args,
	}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		adj.Env = append(adj.Env, &api.KeyValue{Key: k, Value: v})
	}
	l := c.Linux
	res := proto.Clone(l.Resources).(*api.LinuxResources)
	res.Devices = nil // Apply derives the rules from the devices
	adj.Linux = &api.LinuxContainerAdjustment{
		Devices: l.Devices, Resources: res, CgroupsPath: l.CgroupsPath, OomScoreAdj: l.OomScoreAdj, IoPriority: l.IoPriority,
		SeccompPolicy: l.SeccompPolicy, Namespaces: l.Namespaces, Sysctl: l.Sysctl, NetDevices: l.NetDevices, Scheduler: l.Scheduler, Rdt: l.Rdt,
	}
	return adj
}

func TestToContainerRoundTrip(t *testing.T) {
	orig := richSpec()
	meta := ContainerMeta{
		ID: "c1", PodSandboxID: "p1", Name: "app", State: api.ContainerState_CONTAINER_CREATED,
		Labels: map[string]string{"l": "v"}, Image: &api.Image{Name: "img:1"}, CreatedAt: 12345, Pid: 42,
		SeccompProfile: &api.SecurityProfile{ProfileType: api.SecurityProfile_LOCALHOST, LocalhostRef: "p.json"},
		BlockIOClass:   "slow", RDTClass: "gold",
	}
	c := ToContainer(orig, meta)

	if c.Id != "c1" || c.PodSandboxId != "p1" || c.Name != "app" || c.State != api.ContainerState_CONTAINER_CREATED ||
		c.CreatedAt != 12345 || c.Pid != 42 || c.Labels["l"] != "v" || c.GetImage().GetName() != "img:1" {
		t.Errorf("metadata not carried over: %v", c)
	}
	if u := c.GetUser(); u.GetUid() != 1000 || u.GetGid() != 2000 || !slices.Equal(u.GetAdditionalGids(), []uint32{3000, 3001}) {
		t.Errorf("user = %v", u)
	}
	if got := c.GetLinux().GetSeccompProfile(); got.GetLocalhostRef() != "p.json" || got == meta.SeccompProfile {
		t.Errorf("seccomp profile = %v, want a copy of the meta's", got)
	}
	if c.GetLinux().GetResources().GetBlockioClass().GetValue() != "slow" || c.GetLinux().GetResources().GetRdtClass().GetValue() != "gold" {
		t.Errorf("classes not carried over: %v", c.GetLinux().GetResources())
	}
	if n := len(c.GetLinux().GetResources().GetDevices()); n != 2 {
		t.Errorf("got %d device cgroup rules, want 2", n)
	}
	if len(c.CDIDevices) != 1 || c.CDIDevices[0].GetName() != "vendor.com/gpu=0" {
		t.Errorf("CDI devices = %v", c.CDIDevices)
	}

	// The container must not alias the spec.
	c.Env[0] = "CHANGED=1"
	c.Annotations["x"] = "y"
	c.Linux.Sysctl["x"] = "y"
	if orig.Process.Env[0] != "PATH=/bin" || orig.Annotations["x"] != "" || orig.Linux.Sysctl["x"] != "" {
		t.Fatal("ToContainer result shares memory with the spec")
	}
	c = ToContainer(orig, meta)

	// The spec holds the classes' resolved settings only; leave them out.
	adj := adjustmentFrom(c)
	adj.Linux.Resources.BlockioClass, adj.Linux.Resources.RdtClass = nil, nil
	got := &rspec.Spec{}
	if err := Apply(got, adj); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := richSpec()
	want.Process.User = rspec.User{} // not adjustable
	assertSpec(t, got, want)
}

func TestToContainerEdgeCases(t *testing.T) {
	c := ToContainer(nil, ContainerMeta{ID: "x"})
	if c.GetId() != "x" || c.GetLinux() == nil || c.GetUser() != nil || c.GetHooks() != nil {
		t.Errorf("ToContainer(nil spec) = %v", c)
	}
	spec := &rspec.Spec{Annotations: map[string]string{CDIAnnotationKey: "a.com/b=c"}}
	c = ToContainer(spec, ContainerMeta{CDIDevices: []string{"x.com/y=z"}})
	if len(c.CDIDevices) != 1 || c.CDIDevices[0].GetName() != "x.com/y=z" {
		t.Errorf("meta CDI devices should win over the annotation: %v", c.CDIDevices)
	}
	if !maps.Equal(c.Annotations, spec.Annotations) {
		t.Errorf("annotations = %v", c.Annotations)
	}
}

func TestLinuxResourcesConversion(t *testing.T) {
	orig := richSpec().Linux.Resources
	back := FromLinuxResources(ToLinuxResources(orig))
	assertSpec(t, &rspec.Spec{Linux: &rspec.Linux{Resources: back}}, &rspec.Spec{Linux: &rspec.Linux{Resources: orig}})
	if ToLinuxResources(nil) != nil || FromLinuxResources(nil) != nil {
		t.Error("nil resources do not convert to nil")
	}
	if r := ToLinuxResources(&rspec.LinuxResources{Pids: &rspec.LinuxPids{}}); r.GetPids() == nil || r.GetPids().GetLimit() != 0 {
		t.Errorf("unset pids limit converts to %v, want 0", r.GetPids())
	}
	if o := FromLinuxResources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: -1}}); o.Pids == nil || o.Pids.Limit != nil {
		t.Errorf("unlimited pids converts to %v, want an unset limit", o.Pids)
	}
	if o := FromLinuxResources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 5}}}); o.Memory.Swap != nil {
		t.Errorf("FromLinuxResources set swap %d from the limit", *o.Memory.Swap)
	}
}
