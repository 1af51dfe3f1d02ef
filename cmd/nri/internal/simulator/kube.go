package simulator

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/internal/kubepod"
)

// kube is the Kubernetes side of the simulated node: its pods as kubelet
// and containerd describe them to plugins (package kubepod), from the
// scenario's requests, limits, overheads and node.
type kube struct {
	node kubepod.Node
	pods map[*scenario.Pod]kubepod.Pod
	// index is each container's place among its pod's containers.
	index map[*scenario.Container]int
}

func newKube(sc *scenario.Scenario) *kube {
	k := &kube{
		node:  kubepod.Node{CgroupDriver: kubepod.Systemd, MemoryCapacity: kubepod.MachineMemory()},
		pods:  map[*scenario.Pod]kubepod.Pod{},
		index: map[*scenario.Container]int{},
	}
	if n := sc.Node; n != nil {
		if n.CgroupDriver == scenario.CgroupDriverCgroupfs {
			k.node.CgroupDriver = kubepod.Cgroupfs
		}
		if n.Memory != nil && *n.Memory > 0 {
			k.node.MemoryCapacity = int64(*n.Memory)
		}
	}
	byName := map[string]*scenario.Pod{}
	for _, p := range sc.Pods {
		byName[p.Name] = p
		k.pods[p] = kubepod.Pod{UID: p.UID, Overhead: resourceList(p.Overhead)}
	}
	for _, c := range sc.Containers {
		p := byName[c.Pod]
		kp := k.pods[p]
		k.index[c] = len(kp.Containers)
		kp.Containers = append(kp.Containers, kubepod.Container{Requests: resourceList(c.Requests), Limits: resourceList(c.Limits)})
		k.pods[p] = kp
	}
	return k
}

// resourceList converts a scenario's resource list (nil: nothing).
func resourceList(l *scenario.ResourceList) kubepod.Resources {
	var r kubepod.Resources
	if l == nil {
		return r
	}
	if l.CPU != nil {
		r.MilliCPU = int64(*l.CPU)
	}
	if l.Memory != nil {
		r.Memory = int64(*l.Memory)
	}
	return r
}

// podLinux is the Linux part of the pod's description: cgroup parent
// and path, resources and overhead, the sandbox's resources.
func (k *kube) podLinux(p *scenario.Pod) *api.LinuxPodSandbox {
	kp := k.pods[p]
	parent := k.node.PodCgroupParent(kp)
	return &api.LinuxPodSandbox{
		CgroupParent: parent,
		CgroupsPath:  kubepod.CgroupsPath(parent, p.ID),
		PodResources: kp.PodResources(),
		PodOverhead:  kp.PodOverhead(),
		Resources:    kubepod.SandboxResources(),
	}
}

// containerLinux returns what of the container's OCI spec its pod's
// resource requirements make: its cgroups path, its resources (with the
// scenario's resources set over them) and its OOM score adjustment.
func (k *kube) containerLinux(pod *scenario.Pod, ctr *scenario.Container) (string, *rspec.LinuxResources, int) {
	kp, i := k.pods[pod], k.index[ctr]
	res := kp.ContainerResources(i).ToOCI()
	overlay(res, ctr.Resources)
	return kubepod.CgroupsPath(k.node.PodCgroupParent(kp), ctr.ID), res, k.node.OOMScoreAdj(kp, i)
}

// missingResources lists the resources of want that spec does not have,
// each as "NAME=WANT (spec: HAS)".
func missingResources(spec *rspec.Spec, want *scenario.Resources) []string {
	if want == nil {
		return nil
	}
	var cpu *rspec.LinuxCPU
	var mem *rspec.LinuxMemory
	if spec != nil && spec.Linux != nil && spec.Linux.Resources != nil {
		cpu, mem = spec.Linux.Resources.CPU, spec.Linux.Resources.Memory
	}
	if cpu == nil {
		cpu = &rspec.LinuxCPU{}
	}
	if mem == nil {
		mem = &rspec.LinuxMemory{}
	}
	var out []string
	check := func(name string, want, has any, given bool) {
		if given && want != has {
			out = append(out, name+"="+fmtValue(want)+" (spec: "+fmtValue(has)+")")
		}
	}
	check("cpuShares", deref(want.CPUShares), deref(cpu.Shares), want.CPUShares != nil)
	check("cpuQuota", deref(want.CPUQuota), deref(cpu.Quota), want.CPUQuota != nil)
	check("cpuPeriod", deref(want.CPUPeriod), deref(cpu.Period), want.CPUPeriod != nil)
	check("cpusetCpus", want.CpusetCpus, cpu.Cpus, want.CpusetCpus != "")
	check("cpusetMems", want.CpusetMems, cpu.Mems, want.CpusetMems != "")
	var has *scenario.Quantity
	if mem.Limit != nil {
		q := scenario.Quantity(*mem.Limit)
		has = &q
	}
	check("memoryLimit", deref(want.MemoryLimit), deref(has), want.MemoryLimit != nil)
	return out
}

// deref is *p, or nil for nil (so that unset differs from zero).
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// fmtValue writes a resource value; nil is "unset", "" is "none".
func fmtValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "unset"
	case string:
		if v == "" {
			return `""`
		}
		return v
	}
	return fmt.Sprint(v)
}
