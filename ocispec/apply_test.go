//lint:file-ignore SA1019 the protocol still carries prestart hooks and kernel memory limits

package ocispec

import (
	"os"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// applyCase is one adjustment applied to a spec.
type applyCase struct {
	name string
	spec *rspec.Spec
	adj  *api.ContainerAdjustment
	opts []Option
	want *rspec.Spec
}

// runApplyCases applies each case to a copy of its spec and compares.
func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &rspec.Spec{}
			if tc.spec != nil {
				spec = cloneSpec(t, tc.spec)
			}
			if err := Apply(spec, tc.adj, tc.opts...); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			assertSpec(t, spec, tc.want)
		})
	}
}

func linuxAdj(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

func resAdj(r *api.LinuxResources) *api.ContainerAdjustment {
	return linuxAdj(&api.LinuxContainerAdjustment{Resources: r})
}

func withProcess(p rspec.Process) *rspec.Spec { return &rspec.Spec{Process: &p} }

func withLinux(l rspec.Linux) *rspec.Spec { return &rspec.Spec{Linux: &l} }

func withResources(r rspec.LinuxResources) *rspec.Spec {
	return &rspec.Spec{Linux: &rspec.Linux{Resources: &r}}
}

func TestApplyNilAdjustmentAndSpec(t *testing.T) {
	spec := withProcess(rspec.Process{Args: []string{"sh"}})
	want := cloneSpec(t, spec)
	if err := Apply(spec, nil); err != nil {
		t.Fatalf("Apply(nil adjustment): %v", err)
	}
	assertSpec(t, spec, want)
	if err := Apply(nil, &api.ContainerAdjustment{}); err == nil {
		t.Fatal("Apply(nil spec) succeeded")
	}
}

func TestApplyAnnotations(t *testing.T) {
	base := &rspec.Spec{Annotations: map[string]string{"a": "1", "b": "2"}}
	runApplyCases(t, []applyCase{
		{"add to empty spec", nil, &api.ContainerAdjustment{Annotations: map[string]string{"x": "y"}},
			nil, &rspec.Spec{Annotations: map[string]string{"x": "y"}}},
		{"add and replace", base, &api.ContainerAdjustment{Annotations: map[string]string{"a": "10", "c": "3"}},
			nil, &rspec.Spec{Annotations: map[string]string{"a": "10", "b": "2", "c": "3"}}},
		{"remove", base, &api.ContainerAdjustment{Annotations: map[string]string{"-a": "", "-missing": ""}},
			nil, &rspec.Spec{Annotations: map[string]string{"b": "2"}}},
		{"remove then set", base, &api.ContainerAdjustment{Annotations: map[string]string{"-b": "", "b": "new"}},
			nil, &rspec.Spec{Annotations: map[string]string{"a": "1", "b": "new"}}},
	})
}

func TestApplyEnv(t *testing.T) {
	base := withProcess(rspec.Process{Env: []string{"A=1", "B=2", "C=3"}})
	kv := func(k, v string) *api.KeyValue { return &api.KeyValue{Key: k, Value: v} }
	runApplyCases(t, []applyCase{
		{"add to empty spec", nil, &api.ContainerAdjustment{Env: []*api.KeyValue{kv("X", "1"), kv("Y", "=2")}},
			nil, withProcess(rspec.Process{Env: []string{"X=1", "Y==2"}})},
		{"replace in place and append", base, &api.ContainerAdjustment{Env: []*api.KeyValue{kv("D", "4"), kv("B", "20")}},
			nil, withProcess(rspec.Process{Env: []string{"A=1", "B=20", "C=3", "D=4"}})},
		{"remove", base, &api.ContainerAdjustment{Env: []*api.KeyValue{kv("-A", ""), kv("-Z", "")}},
			nil, withProcess(rspec.Process{Env: []string{"B=2", "C=3"}})},
		{"remove all", withProcess(rspec.Process{Env: []string{"A=1"}}), &api.ContainerAdjustment{Env: []*api.KeyValue{kv("-A", "")}},
			nil, withProcess(rspec.Process{})},
		{"remove then set", base, &api.ContainerAdjustment{Env: []*api.KeyValue{kv("-C", ""), kv("C", "30")}},
			nil, withProcess(rspec.Process{Env: []string{"A=1", "B=2", "C=30"}})},
		{"last entry wins", base, &api.ContainerAdjustment{Env: []*api.KeyValue{kv("E", "1"), kv("E", "2")}},
			nil, withProcess(rspec.Process{Env: []string{"A=1", "B=2", "C=3", "E=2"}})},
		{"duplicates in spec collapse", withProcess(rspec.Process{Env: []string{"A=1", "B=2", "A=3"}}),
			&api.ContainerAdjustment{Env: []*api.KeyValue{kv("A", "9")}},
			nil, withProcess(rspec.Process{Env: []string{"A=9", "B=2"}})},
	})
}

func TestApplyArgs(t *testing.T) {
	base := withProcess(rspec.Process{Args: []string{"sh", "-c", "true"}})
	runApplyCases(t, []applyCase{
		{"replace", base, &api.ContainerAdjustment{Args: []string{"sleep", "inf"}},
			nil, withProcess(rspec.Process{Args: []string{"sleep", "inf"}})},
		{"empty keeps", base, &api.ContainerAdjustment{Args: []string{}}, nil, base},
	})
}

func TestApplyHooks(t *testing.T) {
	h := func(p string) rspec.Hook { return rspec.Hook{Path: p} }
	ah := func(p string) []*api.Hook {
		return []*api.Hook{{Path: p, Args: []string{p, "x"}, Env: []string{"E=1"}, Timeout: &api.OptionalInt{Value: 5}}}
	}
	oh := func(p string) rspec.Hook {
		return rspec.Hook{Path: p, Args: []string{p, "x"}, Env: []string{"E=1"}, Timeout: ptr(5)}
	}
	all := &api.Hooks{
		Prestart: ah("/pre"), CreateRuntime: ah("/cr"), CreateContainer: ah("/cc"),
		StartContainer: ah("/sc"), Poststart: ah("/post"), Poststop: ah("/stop"),
	}
	base := &rspec.Spec{Hooks: &rspec.Hooks{Prestart: []rspec.Hook{h("/old")}, Poststop: []rspec.Hook{h("/old")}}}
	runApplyCases(t, []applyCase{
		{"all kinds into empty spec", nil, &api.ContainerAdjustment{Hooks: all}, nil, &rspec.Spec{Hooks: &rspec.Hooks{
			Prestart: []rspec.Hook{oh("/pre")}, CreateRuntime: []rspec.Hook{oh("/cr")}, CreateContainer: []rspec.Hook{oh("/cc")},
			StartContainer: []rspec.Hook{oh("/sc")}, Poststart: []rspec.Hook{oh("/post")}, Poststop: []rspec.Hook{oh("/stop")},
		}}},
		{"appended after existing", base, &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: ah("/pre"), Poststop: ah("/stop")}},
			nil, &rspec.Spec{Hooks: &rspec.Hooks{Prestart: []rspec.Hook{h("/old"), oh("/pre")}, Poststop: []rspec.Hook{h("/old"), oh("/stop")}}}},
		{"empty hooks no-op", nil, &api.ContainerAdjustment{Hooks: &api.Hooks{}}, nil, &rspec.Spec{}},
	})
}

func TestApplyMounts(t *testing.T) {
	m := func(dest, src string, opts ...string) rspec.Mount {
		return rspec.Mount{Destination: dest, Type: "bind", Source: src, Options: opts}
	}
	am := func(dest, src string, opts ...string) *api.Mount {
		return &api.Mount{Destination: dest, Type: "bind", Source: src, Options: opts}
	}
	base := &rspec.Spec{Mounts: []rspec.Mount{m("/proc", "proc"), m("/dev", "tmpfs"), m("/dev/pts", "devpts"), m("/data", "/old")}}
	runApplyCases(t, []applyCase{
		{"add and sort", base, &api.ContainerAdjustment{Mounts: []*api.Mount{am("/a/b", "/x"), am("/a", "/y")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/a", "/y"), m("/data", "/old"), m("/dev", "tmpfs"), m("/proc", "proc"), m("/a/b", "/x"), m("/dev/pts", "devpts")}}},
		{"replace by destination", base, &api.ContainerAdjustment{Mounts: []*api.Mount{am("/data/", "/new", "ro")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/data/", "/new", "ro"), m("/dev", "tmpfs"), m("/proc", "proc"), m("/dev/pts", "devpts")}}},
		{"remove", base, &api.ContainerAdjustment{Mounts: []*api.Mount{am("-/dev/pts", ""), am("-/nothing", "")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/data", "/old"), m("/dev", "tmpfs"), m("/proc", "proc")}}},
		{"rshared sets root propagation", nil, &api.ContainerAdjustment{Mounts: []*api.Mount{am("/s", "/h", "rbind", "rshared")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/s", "/h", "rbind", "rshared")}, Linux: &rspec.Linux{RootfsPropagation: "rshared"}}},
		{"rslave keeps rshared root", withLinux(rspec.Linux{RootfsPropagation: "rshared"}),
			&api.ContainerAdjustment{Mounts: []*api.Mount{am("/s", "/h", "rslave")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/s", "/h", "rslave")}, Linux: &rspec.Linux{RootfsPropagation: "rshared"}}},
		{"rslave sets private root", withLinux(rspec.Linux{RootfsPropagation: "rprivate"}),
			&api.ContainerAdjustment{Mounts: []*api.Mount{am("/s", "/h", "rslave")}}, nil,
			&rspec.Spec{Mounts: []rspec.Mount{m("/s", "/h", "rslave")}, Linux: &rspec.Linux{RootfsPropagation: "rslave"}}},
	})
}

func TestApplyDevices(t *testing.T) {
	dev := func(path, typ string, major, minor int64) *api.LinuxDevice {
		return &api.LinuxDevice{Path: path, Type: typ, Major: major, Minor: minor}
	}
	rule := func(typ string, major, minor int64, access string) rspec.LinuxDeviceCgroup {
		return rspec.LinuxDeviceCgroup{Allow: true, Type: typ, Major: ptr(major), Minor: ptr(minor), Access: access}
	}
	deny := rspec.LinuxDeviceCgroup{Allow: false, Access: "rwm"}
	base := &rspec.Spec{Linux: &rspec.Linux{
		Devices:   []rspec.LinuxDevice{{Path: "/dev/a", Type: "c", Major: 1, Minor: 1}, {Path: "/dev/b", Type: "c", Major: 1, Minor: 2}},
		Resources: &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{deny}},
	}}
	full := &api.LinuxDevice{Path: "/dev/full", Type: "c", Major: 1, Minor: 7,
		FileMode: &api.OptionalFileMode{Value: 0o640}, Uid: &api.OptionalUInt32{Value: 10}, Gid: &api.OptionalUInt32{Value: 20}}
	runApplyCases(t, []applyCase{
		{"add all types", nil, linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{
			full, dev("/dev/sda", "b", 8, 0), dev("/dev/u", "u", 5, 1), dev("/dev/fifo", "p", 0, 0),
		}}), nil, &rspec.Spec{Linux: &rspec.Linux{
			Devices: []rspec.LinuxDevice{
				{Path: "/dev/full", Type: "c", Major: 1, Minor: 7, FileMode: ptr(os.FileMode(0o640)), UID: ptr(uint32(10)), GID: ptr(uint32(20))},
				{Path: "/dev/sda", Type: "b", Major: 8}, {Path: "/dev/u", Type: "u", Major: 5, Minor: 1}, {Path: "/dev/fifo", Type: "p"},
			},
			Resources: &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{rule("c", 1, 7, "rw"), rule("b", 8, 0, "rwm"), rule("c", 5, 1, "rw")}},
		}}},
		{"replace by path", base, linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{dev("/dev/a", "c", 9, 9)}}),
			nil, &rspec.Spec{Linux: &rspec.Linux{
				Devices:   []rspec.LinuxDevice{{Path: "/dev/b", Type: "c", Major: 1, Minor: 2}, {Path: "/dev/a", Type: "c", Major: 9, Minor: 9}},
				Resources: &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{deny, rule("c", 9, 9, "rw")}},
			}}},
		{"remove", base, linuxAdj(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/a"}, {Path: "-/dev/none"}}}),
			nil, &rspec.Spec{Linux: &rspec.Linux{
				Devices:   []rspec.LinuxDevice{{Path: "/dev/b", Type: "c", Major: 1, Minor: 2}},
				Resources: &rspec.LinuxResources{Devices: []rspec.LinuxDeviceCgroup{deny}},
			}}},
	})
}

func TestApplyNamespaces(t *testing.T) {
	base := withLinux(rspec.Linux{Namespaces: []rspec.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/run/netns/a"}, {Type: "mount"}}})
	ns := func(typ, path string) *api.LinuxNamespace { return &api.LinuxNamespace{Type: typ, Path: path} }
	runApplyCases(t, []applyCase{
		{"replace in place and add", base, linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{ns("network", "/run/netns/b"), ns("user", ""), nil}}),
			nil, withLinux(rspec.Linux{Namespaces: []rspec.LinuxNamespace{{Type: "pid"}, {Type: "network", Path: "/run/netns/b"}, {Type: "mount"}, {Type: "user"}}})},
		{"remove", base, linuxAdj(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{ns("-pid", ""), ns("-cgroup", "")}}),
			nil, withLinux(rspec.Linux{Namespaces: []rspec.LinuxNamespace{{Type: "network", Path: "/run/netns/a"}, {Type: "mount"}}})},
	})
}

func TestApplySysctlAndNetDevices(t *testing.T) {
	base := withLinux(rspec.Linux{
		Sysctl:     map[string]string{"net.a": "1", "net.b": "2"},
		NetDevices: map[string]rspec.LinuxNetDevice{"eth1": {Name: "net1"}, "eth2": {}},
	})
	runApplyCases(t, []applyCase{
		{"sysctl add into empty", nil, linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"kernel.x": "5"}}),
			nil, withLinux(rspec.Linux{Sysctl: map[string]string{"kernel.x": "5"}})},
		{"sysctl set and remove", base, linuxAdj(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.a": "10", "-net.b": ""}}),
			nil, withLinux(rspec.Linux{Sysctl: map[string]string{"net.a": "10"}, NetDevices: base.Linux.NetDevices})},
		{"net devices set and remove", base, linuxAdj(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{
			"eth3": {Name: "net3"}, "-eth1": nil, "eth2": {Name: "renamed"},
		}}), nil, withLinux(rspec.Linux{Sysctl: base.Linux.Sysctl, NetDevices: map[string]rspec.LinuxNetDevice{"eth2": {Name: "renamed"}, "eth3": {Name: "net3"}}})},
	})
}

func TestApplyProcessSettings(t *testing.T) {
	runApplyCases(t, []applyCase{
		{"cgroups path", withLinux(rspec.Linux{CgroupsPath: "/old"}), linuxAdj(&api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/x"}),
			nil, withLinux(rspec.Linux{CgroupsPath: "/kubepods/x"})},
		{"empty cgroups path keeps", withLinux(rspec.Linux{CgroupsPath: "/old"}), linuxAdj(&api.LinuxContainerAdjustment{}),
			nil, withLinux(rspec.Linux{CgroupsPath: "/old"})},
		{"oom score adj", nil, linuxAdj(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: -998}}),
			nil, withProcess(rspec.Process{OOMScoreAdj: ptr(-998)})},
		{"oom score adj zero", withProcess(rspec.Process{OOMScoreAdj: ptr(500)}), linuxAdj(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{}}),
			nil, withProcess(rspec.Process{OOMScoreAdj: ptr(0)})},
		{"io priority", nil, linuxAdj(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 3}}),
			nil, withProcess(rspec.Process{IOPriority: &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_BE, Priority: 3}})},
		{"io priority none clears", withProcess(rspec.Process{IOPriority: &rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_RT}}),
			linuxAdj(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{}}), nil, withProcess(rspec.Process{})},
		{"scheduler", nil, linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{
			Policy: api.LinuxSchedulerPolicy_SCHED_DEADLINE, Nice: -5, Priority: 2, Runtime: 10, Deadline: 20, Period: 30,
			Flags: []api.LinuxSchedulerFlag{api.LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK, api.LinuxSchedulerFlag_SCHED_FLAG_RECLAIM},
		}}), nil, withProcess(rspec.Process{Scheduler: &rspec.Scheduler{
			Policy: rspec.SchedDeadline, Nice: -5, Priority: 2, Runtime: 10, Deadline: 20, Period: 30,
			Flags: []rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork, rspec.SchedFlagReclaim},
		}})},
		{"scheduler none clears", withProcess(rspec.Process{Scheduler: &rspec.Scheduler{Policy: rspec.SchedFIFO}}),
			linuxAdj(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{}}), nil, withProcess(rspec.Process{})},
		{"rlimits replace and append", withProcess(rspec.Process{Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 10, Soft: 10}, {Type: "RLIMIT_CORE"}}}),
			&api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 100, Soft: 50}, nil, {Type: "RLIMIT_NPROC", Hard: 7, Soft: 7}}},
			nil, withProcess(rspec.Process{Rlimits: []rspec.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 100, Soft: 50}, {Type: "RLIMIT_CORE"}, {Type: "RLIMIT_NPROC", Hard: 7, Soft: 7}}})},
	})
}

func TestApplySeccompAndMemoryPolicy(t *testing.T) {
	policy := &api.LinuxSeccomp{
		DefaultAction: "SCMP_ACT_ERRNO", DefaultErrno: &api.OptionalUInt32{Value: 1},
		Architectures: []string{"SCMP_ARCH_X86_64"}, Flags: []string{"SECCOMP_FILTER_FLAG_LOG"},
		ListenerPath: "/run/l.sock", ListenerMetadata: "meta",
		Syscalls: []*api.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: "SCMP_ACT_ALLOW"},
			{Names: []string{"kill"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &api.OptionalUInt32{Value: 38},
				Args: []*api.LinuxSeccompArg{{Index: 1, Value: 9, ValueTwo: 0, Op: "SCMP_CMP_EQ"}}},
		},
	}
	want := &rspec.LinuxSeccomp{
		DefaultAction: rspec.ActErrno, DefaultErrnoRet: ptr(uint(1)),
		Architectures: []rspec.Arch{rspec.ArchX86_64}, Flags: []rspec.LinuxSeccompFlag{rspec.LinuxSeccompFlagLog},
		ListenerPath: "/run/l.sock", ListenerMetadata: "meta",
		Syscalls: []rspec.LinuxSyscall{
			{Names: []string{"read", "write"}, Action: rspec.ActAllow},
			{Names: []string{"kill"}, Action: rspec.ActErrno, ErrnoRet: ptr(uint(38)),
				Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 9, Op: rspec.OpEqualTo}}},
		},
	}
	runApplyCases(t, []applyCase{
		{"seccomp replaces", withLinux(rspec.Linux{Seccomp: &rspec.LinuxSeccomp{DefaultAction: rspec.ActAllow}}),
			linuxAdj(&api.LinuxContainerAdjustment{SeccompPolicy: policy}), nil, withLinux(rspec.Linux{Seccomp: want})},
		{"memory policy", nil, linuxAdj(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{
			Mode: api.MpolMode_MPOL_BIND, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES},
		}}), nil, withLinux(rspec.Linux{MemoryPolicy: &rspec.LinuxMemoryPolicy{
			Mode: rspec.MpolBind, Nodes: "0-1", Flags: []rspec.MemoryPolicyFlagType{rspec.MpolFStaticNodes},
		}})},
	})
}
