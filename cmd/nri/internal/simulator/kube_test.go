package simulator

import (
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// kubeScenario has a pod of each QoS class; %DRIVER% is the node's
// cgroup driver.
const kubeScenario = `node: {cgroupDriver: %DRIVER%, memory: 16Gi}
pods:
  - {name: g, uid: 1111-aaaa}
  - {name: b, uid: 2222-bbbb, overhead: {cpu: 250m, memory: 120Mi}}
  - {name: e, uid: 3333-cccc}
containers:
  - {name: db, pod: g, requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}
  - {name: web, pod: b, requests: {cpu: 250m, memory: 256Mi}, limits: {cpu: "1", memory: 512Mi},
     resources: {cpusetCpus: "0-1", cpuShares: 100}}
  - {name: job, pod: e}
steps: [{runPod: g}]
`

func loadKube(t *testing.T, driver string) (*scenario.Scenario, *store) {
	t.Helper()
	sc, err := scenario.Parse("kube.yaml", []byte(strings.ReplaceAll(kubeScenario, "%DRIVER%", driver)))
	if err != nil {
		t.Fatal(err)
	}
	return sc, newStore(sc)
}

// TestPodsAsKubeletMakesThem checks what the simulator tells plugins of
// pods and containers of each QoS class, with each cgroup driver: the
// values kubepod computes, in the fields containerd fills.
func TestPodsAsKubeletMakesThem(t *testing.T) {
	for _, tt := range []struct {
		driver              string
		parents, ctrCgroups []string
	}{
		{driver: "systemd",
			parents: []string{"/kubepods.slice/kubepods-pod1111_aaaa.slice",
				"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2222_bbbb.slice",
				"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3333_cccc.slice"},
			ctrCgroups: []string{"kubepods-pod1111_aaaa.slice:cri-containerd:", "kubepods-burstable-pod2222_bbbb.slice:cri-containerd:",
				"kubepods-besteffort-pod3333_cccc.slice:cri-containerd:"}},
		{driver: "cgroupfs",
			parents:    []string{"/kubepods/pod1111-aaaa", "/kubepods/burstable/pod2222-bbbb", "/kubepods/besteffort/pod3333-cccc"},
			ctrCgroups: []string{"/kubepods/pod1111-aaaa/", "/kubepods/burstable/pod2222-bbbb/", "/kubepods/besteffort/pod3333-cccc/"}},
	} {
		t.Run(tt.driver, func(t *testing.T) {
			sc, st := loadKube(t, tt.driver)
			for i, p := range sc.Pods {
				pb := st.podSandbox(p, 100, 1)
				if got := pb.GetLinux().GetCgroupParent(); got != tt.parents[i] {
					t.Errorf("pod %s: cgroup parent %q, want %q", p.Name, got, tt.parents[i])
				}
				c := sc.Containers[i]
				spec := newSpec(st.kube, p, c, 100)
				if got, want := spec.Linux.CgroupsPath, tt.ctrCgroups[i]+c.ID; got != want {
					t.Errorf("container %s: cgroups path %q, want %q", c.Name, got, want)
				}
				if got, want := pb.GetLinux().GetCgroupsPath(), tt.ctrCgroups[i]+p.ID; got != want {
					t.Errorf("pod %s: cgroups path %q, want %q", p.Name, got, want)
				}
			}
		})
	}
	sc, st := loadKube(t, "systemd")
	// Guaranteed: 2 CPUs, 1Gi; Burstable: 256 shares from 250m, a quota of
	// one period, 512Mi, its scenario resources over them; BestEffort: 2.
	want := []struct {
		shares uint64
		quota  *int64
		limit  *int64
		cpus   string
		oom    int
	}{
		{2048, ptr[int64](200000), ptr[int64](1 << 30), "", -997},
		{100, ptr[int64](100000), ptr[int64](512 << 20), "0-1", 985},
		{2, nil, nil, "", 1000},
	}
	for i, c := range sc.Containers {
		spec := newSpec(st.kube, sc.Pods[i], c, 100)
		cpu, mem := spec.Linux.Resources.CPU, spec.Linux.Resources.Memory
		w := want[i]
		if *cpu.Shares != w.shares || !eqPtr(cpu.Quota, w.quota) || *cpu.Period != 100000 || !eqPtr(mem.Limit, w.limit) || cpu.Cpus != w.cpus {
			t.Errorf("container %s: cpu %+v, memory %+v; want %+v", c.Name, cpu, mem, w)
		}
		if *spec.Process.OOMScoreAdj != w.oom {
			t.Errorf("container %s: OOM score adjustment %d, want %d", c.Name, *spec.Process.OOMScoreAdj, w.oom)
		}
	}
	b := st.podSandbox(sc.Pods[1], 100, 1).GetLinux()
	if res := b.GetPodResources(); res.GetCpu().GetShares().GetValue() != 256 || res.GetMemory().GetLimit().GetValue() != 512<<20 {
		t.Errorf("Burstable pod's resources %v", res)
	}
	if o := b.GetPodOverhead(); o.GetCpu().GetShares().GetValue() != 256 || o.GetCpu().GetQuota().GetValue() != 25000 || o.GetMemory().GetLimit().GetValue() != 120<<20 {
		t.Errorf("Burstable pod's overhead %v", o)
	}
	if r := b.GetResources(); r.GetCpu().GetShares().GetValue() != 2 {
		t.Errorf("sandbox resources %v, want containerd's 2 shares", r)
	}
}

func ptr[T any](v T) *T { return &v }

func eqPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// TestMissingResources checks expect.resources against a spec.
func TestMissingResources(t *testing.T) {
	sc, st := loadKube(t, "systemd")
	spec := newSpec(st.kube, sc.Pods[1], sc.Containers[1], 100)
	mi := scenario.Quantity(512 << 20)
	match := &scenario.Resources{CpusetCpus: "0-1", CPUShares: ptr[uint64](100), CPUQuota: ptr[int64](100000), MemoryLimit: &mi}
	if got := missingResources(spec, match); len(got) != 0 {
		t.Errorf("the spec's own resources are missing: %q", got)
	}
	gi := scenario.Quantity(1 << 30)
	wrong := &scenario.Resources{CpusetCpus: "2", CpusetMems: "0", CPUShares: ptr[uint64](100), MemoryLimit: &gi}
	got := missingResources(spec, wrong)
	want := []string{`cpusetCpus=2 (spec: 0-1)`, `cpusetMems=0 (spec: "")`, `memoryLimit=1Gi (spec: 512Mi)`}
	if !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
	if got := missingResources(newSpec(st.kube, sc.Pods[2], sc.Containers[2], 100), &scenario.Resources{MemoryLimit: &gi}); !slices.Equal(got, []string{"memoryLimit=1Gi (spec: unset)"}) {
		t.Errorf("BestEffort container: missing %q", got)
	}
}
