package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

var (
	testPod = &api.PodSandbox{Id: "pod-1", Name: "attacker", Namespace: "gpu-workloads", Labels: map[string]string{"accel": "gpu"}}
	testCtr = &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "main"}
)

// fields returns the field names of violations, in order.
func fields(vs []Violation) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Field.String()
	}
	return strings.Join(names, ",")
}

// TestHostRootAttack checks the attack the device-injector sample made
// possible (issue 25): a bind mount of the host's root read-write and the
// node's disk as a device, refused by the sample policy's
// device-injector grant, with the field, value and rule named, and
// allowed by an allow-all grant and without a policy.
func TestHostRootAttack(t *testing.T) {
	attack := &api.ContainerAdjustment{
		Mounts: []*api.Mount{{Source: "/", Destination: "/host", Type: "bind", Options: []string{"rbind", "rw"}}},
		Linux:  &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/sda", Type: "b", Major: 8, Minor: 0}}},
	}
	samples, err := LoadUntrusted("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := samples.GrantFor("10", "device-injector")
	vs := g.CheckAdjustment(testPod, testCtr, attack)
	if fields(vs) != "mounts,linux.devices" {
		t.Fatalf("sample grant: violations %v, want mounts and linux.devices", vs)
	}
	if want := `mounts "{source: /, destination: /host, type: bind, options: [rbind, rw]}" denied: ` +
		`source "/" is not under an allowed source (testdata/samples.yaml:16: grants[0].adjust.mounts)`; vs[0].String() != want {
		t.Errorf("mount violation:\n%s\nwant\n%s", vs[0], want)
	}
	if want := `linux.devices "/dev/sda b 8:0" denied: no device rule allows this path, type and number (testdata/samples.yaml:13: grants[0].adjust.devices)`; vs[1].String() != want {
		t.Errorf("device violation:\n%s\nwant\n%s", vs[1], want)
	}
	err = Deny("10-device-injector", testPod, testCtr, vs)
	if want := "plugin 10-device-injector: changes to container main (ctr-1) of pod gpu-workloads/attacker denied by the policy: mounts "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error: %v", err)
	}
	// Read-only, the root is still not under /srv/models.
	attack.Mounts[0].Options = []string{"rbind", "ro"}
	if vs := g.CheckAdjustment(testPod, testCtr, attack); len(vs) != 2 || vs[0].Reason != `source "/" is not under an allowed source` {
		t.Errorf("read-only root: %v", vs)
	}
	// What the grant is for passes.
	ok := &api.ContainerAdjustment{
		Mounts:     []*api.Mount{{Source: "/srv/models/llama", Destination: "/models", Type: "bind", Options: []string{"rbind", "ro"}}},
		Linux:      &api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0}}},
		CDIDevices: []*api.CDIDevice{{Name: "nvidia.com/gpu=0"}},
	}
	if vs := g.CheckAdjustment(testPod, testCtr, ok); vs != nil {
		t.Errorf("allowed adjustment refused: %v", vs)
	}

	all, err := LoadUntrusted("testdata/allow-all.yaml")
	if err != nil {
		t.Fatal(err)
	}
	attack.Mounts[0].Options = []string{"rbind", "rw"}
	if vs := all.GrantFor("10", "device-injector").CheckAdjustment(testPod, testCtr, attack); vs != nil {
		t.Errorf("allow-all grant refuses the attack: %v", vs)
	}
	var noPolicy *Policy
	if vs := noPolicy.GrantFor("10", "device-injector").CheckAdjustment(testPod, testCtr, attack); vs != nil {
		t.Errorf("no policy refuses the attack: %v", vs)
	}
}

// ruleCase is an adjustment checked against a grant's adjust: want lists
// the fields of the violations, "" for none.
type ruleCase struct {
	name string
	adj  *api.ContainerAdjustment
	want string
}

func linux(l *api.LinuxContainerAdjustment) *api.ContainerAdjustment {
	return &api.ContainerAdjustment{Linux: l}
}

func resources(r *api.LinuxResources) *api.ContainerAdjustment {
	return linux(&api.LinuxContainerAdjustment{Resources: r})
}

// TestCheckRules checks each rule type with a change it allows and one it
// refuses.
func TestCheckRules(t *testing.T) {
	g := mustParse(t, `
default:
  adjust:
    annotations: ["example.com/*"]
    mounts:
      sources: [{path: /srv/models}, {path: /var/cache/rw, readWrite: true}]
      types: [tmpfs]
      options: [bind, rbind, ro, rw, nosuid, "size=*"]
      destinations: ["/models*", "/cache", "/tmp"]
      remove: ["/models*"]
    env: ["NVIDIA_*"]
    hooks: ["/usr/bin/nvidia-ctk"]
    rlimits:
      RLIMIT_NOFILE: {hard: 1024, soft: 512}
    cdiDevices: ["nvidia.com/gpu=*"]
    devices:
      - {path: "/dev/nvidia[0-9]*", type: c, major: 195}
      - {path: /dev/fuse, type: c, major: 10, minor: 229}
    resources:
      memory: {maxLimit: 1Gi}
      cpu: {maxShares: 2048}
      hugepageLimits: {pageSizes: [2MB], maxLimit: 64Mi}
      blockioClasses: [low]
      rdtClasses: ["gold*"]
      unified: ["memory.high"]
      devices: {}
      pids: {maxLimit: 1000}
    oomScoreAdj: {min: 0, max: 500}
    ioPriority: {classes: [IOPRIO_CLASS_BE]}
    namespaces: {create: [ipc], join: [network], remove: [uts]}
    sysctl: ["net.ipv4.*"]
    netDevices: ["eth1*"]
    scheduler: {policies: [SCHED_BATCH, SCHED_RR], minNice: 0, maxPriority: 10}
    rdt: {closIds: ["gold"]}
    memoryPolicy: {modes: [MPOL_BIND]}
`).GrantFor("10", "x")
	mount := func(src, dst, typ string, opts ...string) *api.ContainerAdjustment {
		return &api.ContainerAdjustment{Mounts: []*api.Mount{{Source: src, Destination: dst, Type: typ, Options: opts}}}
	}
	dev := func(p, typ string, major, minor int64) *api.ContainerAdjustment {
		return linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: p, Type: typ, Major: major, Minor: minor}}})
	}
	for _, tc := range []ruleCase{
		{"annotation allowed", &api.ContainerAdjustment{Annotations: map[string]string{"example.com/a": "1"}}, ""},
		{"annotation refused", &api.ContainerAdjustment{Annotations: map[string]string{"other.io/a": "1"}}, "annotations"},
		{"annotation removal refused", &api.ContainerAdjustment{Annotations: map[string]string{"-other.io/a": ""}}, "annotations"},
		{"annotation removal allowed", &api.ContainerAdjustment{Annotations: map[string]string{"-example.com/a": ""}}, ""},
		{"bind ro allowed", mount("/srv/models/a", "/models", "bind", "rbind", "ro"), ""},
		{"bind of the source itself", mount("/srv/models", "/models", "bind", "ro"), ""},
		{"bind rw of a read-only source", mount("/srv/models", "/models", "bind", "rbind", "rw"), "mounts"},
		{"bind rw by default", mount("/srv/models", "/models", "bind", "rbind"), "mounts"},
		{"bind rw of a read-write source", mount("/var/cache/rw/x", "/cache", "bind", "rbind"), ""},
		{"sibling prefix", mount("/srv/models2", "/models", "bind", "ro"), "mounts"},
		{"dot-dot escape", mount("/srv/models/../../etc", "/models", "bind", "ro"), "mounts"},
		{"relative source", mount("srv/models", "/models", "bind", "ro"), "mounts"},
		{"bind by option", mount("/etc", "/models", "", "rbind", "ro"), "mounts"},
		{"option refused", mount("/srv/models", "/models", "bind", "ro", "rshared"), "mounts"},
		{"tmpfs allowed", mount("tmpfs", "/tmp", "tmpfs", "size=64m"), ""},
		{"proc refused", mount("proc", "/tmp", "proc"), "mounts"},
		{"destination refused", mount("/srv/models", "/etc", "bind", "ro"), "mounts"},
		{"mount removal allowed", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/models"}}}, ""},
		{"mount removal refused", &api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/etc/hosts"}}}, "mounts"},
		{"env allowed", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "NVIDIA_VISIBLE_DEVICES", Value: "0"}}}, ""},
		{"env refused", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "LD_PRELOAD", Value: "/x.so"}}}, "env"},
		{"env removal refused", &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "-PATH"}}}, "env"},
		{"hook allowed", &api.ContainerAdjustment{Hooks: &api.Hooks{Prestart: []*api.Hook{{Path: "/usr/bin/nvidia-ctk"}}}}, ""},
		{"hook refused in any stage", &api.ContainerAdjustment{Hooks: &api.Hooks{Poststop: []*api.Hook{{Path: "/bin/sh"}}}}, "hooks"},
		{"rlimit allowed", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512}}}, ""},
		{"rlimit over the hard cap", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1025, Soft: 512}}}, "rlimits"},
		{"rlimit over the soft cap", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 513}}}, "rlimits"},
		{"rlimit type refused", &api.ContainerAdjustment{Rlimits: []*api.POSIXRlimit{{Type: "RLIMIT_MEMLOCK", Hard: 1, Soft: 1}}}, "rlimits"},
		{"CDI allowed", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "nvidia.com/gpu=all"}}}, ""},
		{"CDI refused", &api.ContainerAdjustment{CDIDevices: []*api.CDIDevice{{Name: "vendor.com/disk=sda"}}}, "cdi_devices"},
		{"args refused", &api.ContainerAdjustment{Args: []string{"/bin/sh"}}, "args"},
		{"device allowed", dev("/dev/nvidia3", "c", 195, 3), ""},
		{"device u is c", dev("/dev/nvidia3", "u", 195, 3), ""},
		{"device exact minor", dev("/dev/fuse", "c", 10, 229), ""},
		{"device wrong minor", dev("/dev/fuse", "c", 10, 1), "linux.devices"},
		{"device wrong major", dev("/dev/nvidia3", "c", 8, 0), "linux.devices"},
		{"device wrong type", dev("/dev/nvidia3", "b", 195, 0), "linux.devices"},
		{"device wrong path", dev("/dev/sda", "c", 195, 0), "linux.devices"},
		{"device unclean path", dev("/dev/nvidia0/../sda", "c", 195, 0), "linux.devices"},
		{"device removal allowed", dev("-/dev/nvidia0", "", 0, 0), ""},
		{"device removal refused", dev("-/dev/null", "", 0, 0), "linux.devices"},
		{"device setuid mode", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/nvidia0", Type: "c", Major: 195, FileMode: &api.OptionalFileMode{Value: 0o4755}}}}), "linux.devices"},
		{"memory allowed", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1 << 30}}}), ""},
		{"memory over the cap", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 1<<30 + 1}}}), "linux.resources.memory"},
		{"memory reservation over the cap", resources(&api.LinuxResources{Memory: &api.LinuxMemory{Reservation: &api.OptionalInt64{Value: 2 << 30}}}), "linux.resources.memory"},
		{"empty memory is no change", resources(&api.LinuxResources{Memory: &api.LinuxMemory{}}), ""},
		{"cpu allowed", resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 1024}, Cpus: "0-3"}}), ""},
		{"cpu shares over the cap", resources(&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 4096}}}), "linux.resources.cpu"},
		{"cpu realtime refused", resources(&api.LinuxResources{Cpu: &api.LinuxCPU{RealtimeRuntime: &api.OptionalInt64{Value: 1}}}), "linux.resources.cpu"},
		{"hugepages allowed", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 20}}}), ""},
		{"hugepages size refused", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "1GB", Limit: 1 << 20}}}), "linux.resources.hugepage_limits"},
		{"hugepages over the cap", resources(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 1 << 30}}}), "linux.resources.hugepage_limits"},
		{"blockio allowed", resources(&api.LinuxResources{BlockioClass: &api.OptionalString{Value: "low"}}), ""},
		{"blockio refused", resources(&api.LinuxResources{BlockioClass: &api.OptionalString{Value: "high"}}), "linux.resources.blockio_class"},
		{"rdt class allowed", resources(&api.LinuxResources{RdtClass: &api.OptionalString{Value: "gold-1"}}), ""},
		{"rdt class refused", resources(&api.LinuxResources{RdtClass: &api.OptionalString{Value: "platinum"}}), "linux.resources.rdt_class"},
		{"unified allowed", resources(&api.LinuxResources{Unified: map[string]string{"memory.high": "1G"}}), ""},
		{"unified refused", resources(&api.LinuxResources{Unified: map[string]string{"memory.max": "max"}}), "linux.resources.unified"},
		{"device cgroup deny rule allowed", resources(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: false, Type: "b"}}}), ""},
		{"device cgroup allow rule refused", resources(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "b", Major: &api.OptionalInt64{Value: 8}, Access: "rwm"}}}), "linux.resources.devices"},
		{"pids allowed", resources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 1000}}), ""},
		{"pids over the cap", resources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 1001}}), "linux.resources.pids"},
		{"pids unlimited under a cap", resources(&api.LinuxResources{Pids: &api.LinuxPids{Limit: -1}}), "linux.resources.pids"},
		{"cgroups path refused", linux(&api.LinuxContainerAdjustment{CgroupsPath: "/kubepods/x"}), "linux.cgroups_path"},
		{"oom allowed", linux(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: 500}}), ""},
		{"oom out of range", linux(&api.LinuxContainerAdjustment{OomScoreAdj: &api.OptionalInt{Value: -1000}}), "linux.oom_score_adj"},
		{"io priority allowed", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4}}), ""},
		{"io priority refused", linux(&api.LinuxContainerAdjustment{IoPriority: &api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_RT}}), "linux.io_priority"},
		{"seccomp refused", linux(&api.LinuxContainerAdjustment{SeccompPolicy: &api.LinuxSeccomp{DefaultAction: "SCMP_ACT_ALLOW"}}), "linux.seccomp_policy"},
		{"namespace create allowed", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "ipc"}}}), ""},
		{"namespace join allowed", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "network", Path: "/var/run/netns/x"}}}), ""},
		{"namespace join refused", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "pid", Path: "/proc/1/ns/pid"}}}), "linux.namespaces"},
		{"namespace create refused", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "user"}}}), "linux.namespaces"},
		{"namespace removal allowed", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-uts"}}}), ""},
		{"namespace removal refused", linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-network"}}}), "linux.namespaces"},
		{"sysctl allowed", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"net.ipv4.ip_forward": "1"}}), ""},
		{"sysctl refused", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"kernel.shmmax": "1"}}), "linux.sysctl"},
		{"sysctl removal refused", linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"-kernel.shmmax": ""}}), "linux.sysctl"},
		{"net device allowed", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth1": {Name: "net1"}}}), ""},
		{"net device refused", linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"eth0": {Name: "net1"}}}), "linux.net_devices"},
		{"scheduler allowed", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: 5}}), ""},
		{"scheduler policy refused", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 1}}), "linux.scheduler"},
		{"scheduler nice refused", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_BATCH, Nice: -5}}), "linux.scheduler"},
		{"scheduler priority refused", linux(&api.LinuxContainerAdjustment{Scheduler: &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_RR, Priority: 50}}), "linux.scheduler"},
		{"rdt allowed", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{Value: "gold"}}}), ""},
		{"rdt clos refused", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{ClosId: &api.OptionalString{Value: "x"}}}), "linux.rdt"},
		{"rdt schemata refused", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Schemata: &api.OptionalRepeatedString{Value: []string{"L3:0=f"}}}}), "linux.rdt"},
		{"rdt removal allowed", linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}}), ""},
		{"memory policy allowed", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Nodes: "0"}}), ""},
		{"memory policy refused", linux(&api.LinuxContainerAdjustment{MemoryPolicy: &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_INTERLEAVE}}), "linux.memory_policy"},
		{"several refusals", &api.ContainerAdjustment{Args: []string{"x"}, Env: []*api.KeyValue{{Key: "A"}}}, "env,args"},
		{"nil adjustment", nil, ""},
	} {
		if got := fields(g.CheckAdjustment(testPod, testCtr, tc.adj)); got != tc.want {
			t.Errorf("%s: violations %q, want %q: %v", tc.name, got, tc.want, g.CheckAdjustment(testPod, testCtr, tc.adj))
		}
	}
}

// TestViolationValueBounded checks that a long value from a plugin is cut
// in the violation and so in errors and logs.
func TestViolationValueBounded(t *testing.T) {
	g := mustParse(t, "").GrantFor("10", "x")
	key := strings.Repeat("K", 100_000)
	vs := g.CheckAdjustment(testPod, testCtr, &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: key}}})
	if len(vs) != 1 || len(vs[0].Value) > MaxValueLength+32 || !strings.Contains(vs[0].Value, "(100000 bytes)") {
		t.Fatalf("violation value of %d bytes: %.200s", len(vs[0].Value), vs[0].Value)
	}
	if vs[0].Reason != notGranted || vs[0].Rule != "policy.yaml: no default grant (no adjust.env)" {
		t.Errorf("reason %q, rule %q", vs[0].Reason, vs[0].Rule)
	}
	many := make([]Violation, 10)
	for i := range many {
		many[i] = vs[0]
	}
	if err := Deny("10-x", testPod, nil, many); !strings.HasSuffix(err.Error(), "; and 6 more") || len(err.Error()) > 2000 {
		t.Errorf("error of 10 violations: %d bytes: %.300s", len(err.Error()), err)
	}
}

// TestCheckUpdateAndEviction checks updates of running containers and
// evictions: the classes the grant's update allows, with their caps, and
// only within its where.
func TestCheckUpdateAndEviction(t *testing.T) {
	p := mustParse(t, `
grants:
  - plugins: [balloons]
    where: {namespaces: [gpu-*]}
    update:
      cpu: {}
      memory: {maxLimit: 2G}
    evict: true
  - plugins: [observer]
`)
	g := p.GrantFor("10", "balloons")
	outside := &api.PodSandbox{Id: "pod-2", Name: "sys", Namespace: "kube-system"}
	upd := func(r *api.LinuxResources) *api.ContainerUpdate {
		return &api.ContainerUpdate{ContainerId: testCtr.Id, Linux: &api.LinuxContainerUpdate{Resources: r}}
	}
	cpu := upd(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-1"}})
	for _, tc := range []struct {
		name string
		g    *Grant
		pod  *api.PodSandbox
		u    *api.ContainerUpdate
		want string
	}{
		{"cpu allowed", g, testPod, cpu, ""},
		{"memory within the cap", g, testPod, upd(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2e9}}}), ""},
		{"memory over the cap", g, testPod, upd(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 3e9}}}), "update.linux.resources.memory"},
		{"pids not granted", g, testPod, upd(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 10}}), "update.linux.resources.pids"},
		{"outside where", g, outside, cpu, "update.linux.resources.cpu"},
		{"observer", p.GrantFor("10", "observer"), testPod, cpu, "update.linux.resources.cpu"},
		{"empty update", p.GrantFor("10", "observer"), testPod, &api.ContainerUpdate{ContainerId: "x"}, ""},
	} {
		if got := fields(tc.g.CheckUpdate(tc.pod, testCtr, tc.u)); got != tc.want {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
	ev := &api.ContainerEviction{ContainerId: testCtr.Id, Reason: "pressure"}
	if vs := g.CheckEviction(testPod, testCtr, ev); vs != nil {
		t.Errorf("eviction allowed: %v", vs)
	}
	if vs := g.CheckEviction(outside, testCtr, ev); fields(vs) != "evict" || !strings.Contains(vs[0].Rule, `namespaces=["gpu-*"]`) {
		t.Errorf("eviction outside where: %v", vs)
	}
	if vs := p.GrantFor("10", "observer").CheckEviction(testPod, testCtr, ev); fields(vs) != "evict" || vs[0].Reason != notGranted {
		t.Errorf("eviction not granted: %v", vs)
	}
}

// TestCheckAllowPathAllocations checks that a check that allows
// everything does not allocate, but to look bind mount sources up on the
// host: at most one allocation per name looked up (each a system call).
func TestCheckAllowPathAllocations(t *testing.T) {
	g, adj := benchGrant(t)
	if vs := g.CheckAdjustment(testPod, testCtr, adj); vs != nil {
		t.Fatalf("benchmark adjustment refused: %v", vs)
	}
	names := 0
	for _, m := range adj.Mounts {
		names += strings.Count(m.Source, "/")
	}
	if n := testing.AllocsPerRun(100, func() { g.CheckAdjustment(testPod, testCtr, adj) }); n > float64(names) {
		t.Errorf("%v allocations per allowed check, want at most %d (the names of the mount sources)", n, names)
	}
	adj.Mounts = nil
	if n := testing.AllocsPerRun(100, func() { g.CheckAdjustment(testPod, testCtr, adj) }); n != 0 {
		t.Errorf("%v allocations per allowed check without mounts, want 0", n)
	}
}

func ExampleGrant_CheckAdjustment() {
	p, _ := Parse("policy.yaml", []byte(`
grants:
  - plugins: [device-injector]
    adjust:
      mounts:
        sources: [{path: /srv/models}]
`))
	g := p.GrantFor("10", "device-injector")
	adj := &api.ContainerAdjustment{Mounts: []*api.Mount{{Source: "/", Destination: "/host", Type: "bind", Options: []string{"rbind", "rw"}}}}
	for _, v := range g.CheckAdjustment(nil, nil, adj) {
		fmt.Println(v.Field, v.Reason)
	}
	// Output: mounts source "/" is not under an allowed source
}

// TestResourceValuesAsSet checks that a refused memory or CPU change is
// rendered with the settings the plugin set, and only those: a limit
// alone is not "limit N reservation 0".
func TestResourceValuesAsSet(t *testing.T) {
	g := mustParse(t, "grants:\n  - plugins: [x]\n    update: {memory: {maxLimit: 1G}}\n").GrantFor("10", "x")
	upd := func(r *api.LinuxResources) *api.ContainerUpdate {
		return &api.ContainerUpdate{ContainerId: testCtr.Id, Linux: &api.LinuxContainerUpdate{Resources: r}}
	}
	for _, tc := range []struct {
		r    *api.LinuxResources
		want string
	}{
		{&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2e9}}}, `"limit 2000000000"`},
		{&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 2e9}, Swap: &api.OptionalInt64{Value: 0}}}, `"limit 2000000000 swap 0"`},
		{&api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}}}, `"shares 512"`},
		{&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-1", Quota: &api.OptionalInt64{Value: 5000}}}, `"quota 5000 cpus 0-1"`},
	} {
		vs := g.CheckUpdate(testPod, testCtr, upd(tc.r))
		if len(vs) != 1 || vs[0].Value != tc.want {
			t.Errorf("%v: violations %v, want one with value %s", tc.r, vs, tc.want)
		}
	}
}
