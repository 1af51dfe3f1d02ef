//go:build wasip1

// Command qos-pin is the resource-policy plugin of the example scenario
// qos.yaml, a WebAssembly plugin built from Go as wasm-env is: a toy
// static CPU policy that reads what a resource policy reads. It takes a
// container's QoS class from its pod's cgroup parent (as kubelet names it:
// .../kubepods-burstable-pod<UID>.slice, .../kubepods-besteffort-...,
// and neither for Guaranteed), and its CPU limit from its CFS quota and
// period. A container of a Guaranteed pod with whole CPUs gets that many
// CPUs of its own from the exclusive pool; every other container gets the
// shared pool. It annotates the container with the class it saw, and
// frees the CPUs when the container is removed. Its configuration:
//
//	shared=0-1
//	exclusive=2-7
package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

// classAnnotation is the annotation naming the QoS class the plugin saw.
const classAnnotation = "qos-pin.nrikit.dev/class"

// plugin is the policy's state: its pools, and the exclusive CPUs each
// container holds.
type plugin struct {
	mu        sync.Mutex
	shared    string
	exclusive []int          // the pool, in order
	owner     map[int]string // exclusive CPU -> container ID
}

// Configure reads the pools: shared=A-B and exclusive=C-D lines.
func (p *plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shared, p.exclusive, p.owner = "", nil, map[int]string{}
	for i, line := range strings.Split(config, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, cpus, _ := strings.Cut(line, "=")
		first, last, err := cpuRange(cpus)
		if err != nil {
			return 0, fmt.Errorf("configuration line %d: %w", i+1, err)
		}
		switch key {
		case "shared":
			p.shared = cpus
		case "exclusive":
			for c := first; c <= last; c++ {
				p.exclusive = append(p.exclusive, c)
			}
		default:
			return 0, fmt.Errorf("configuration line %d: want shared=A-B or exclusive=A-B, not %q", i+1, line)
		}
	}
	if p.shared == "" {
		return 0, fmt.Errorf("no shared CPUs configured (shared=A-B)")
	}
	return 0, nil
}

// cpuRange parses "A-B" (or "A").
func cpuRange(s string) (int, int, error) {
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || first < 0 || last < first || last > 4095 {
		return 0, 0, fmt.Errorf("%q is not a CPU range such as 2-7", s)
	}
	return first, last, nil
}

// qosClass is the pod's QoS class, from its cgroup parent.
func qosClass(pod *api.PodSandbox) string {
	parent := pod.GetLinux().GetCgroupParent()
	switch {
	case strings.Contains(parent, "besteffort"):
		return "BestEffort"
	case strings.Contains(parent, "burstable"):
		return "Burstable"
	}
	return "Guaranteed"
}

// wholeCPUs is the container's CPU limit in whole CPUs, or 0 if it has
// none or a fraction.
func wholeCPUs(ctr *api.Container) int {
	cpu := ctr.GetLinux().GetResources().GetCpu()
	quota, period := cpu.GetQuota().GetValue(), int64(cpu.GetPeriod().GetValue())
	if quota <= 0 || period <= 0 || quota%period != 0 {
		return 0
	}
	return int(quota / period)
}

// CreateContainer pins the container.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	class := qosClass(pod)
	adj := &api.ContainerAdjustment{}
	adj.AddAnnotation(classAnnotation, class)
	cpus := p.shared
	if n := wholeCPUs(ctr); class == "Guaranteed" && n > 0 {
		mine, err := p.take(ctr.GetId(), n)
		if err != nil {
			return nil, nil, err
		}
		cpus = mine
	}
	adj.SetLinuxCPUSetCPUs(cpus)
	return adj, nil, nil
}

// take gives id n exclusive CPUs, as a cpuset list.
func (p *plugin) take(id string, n int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var got []string
	for _, c := range p.exclusive {
		if len(got) < n && p.owner[c] == "" {
			p.owner[c] = id
			got = append(got, strconv.Itoa(c))
		}
	}
	if len(got) < n {
		for c, owner := range p.owner {
			if owner == id {
				delete(p.owner, c)
			}
		}
		return "", fmt.Errorf("%d exclusive CPUs wanted, %d free", n, len(got))
	}
	return strings.Join(got, ","), nil
}

// RemoveContainer frees the container's exclusive CPUs.
func (p *plugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, owner := range p.owner {
		if owner == ctr.GetId() {
			delete(p.owner, c)
		}
	}
	return nil
}

// A c-shared module runs its init functions when the host initialises
// it, never main.
func init() { wasmguest.Register(&plugin{}) }

func main() {}
