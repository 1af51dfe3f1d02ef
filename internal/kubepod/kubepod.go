// Package kubepod describes Kubernetes pods and their containers as
// kubelet and containerd present them to NRI plugins: a pod's QoS class,
// derived from its containers' requests and limits; its cgroup parent in
// kubelet's systemd or cgroupfs layout and the cgroups paths containerd
// derives from it; the pod's resources and overhead
// (LinuxPodSandbox.pod_resources and pod_overhead) and the sandbox's
// resources; each container's Linux resources and OOM score adjustment.
//
// The formulas are kubelet v1.37's (pkg/kubelet/cm: cgroup names, CPU
// shares and quota; pkg/apis/core/v1/helper/qos: the QoS class;
// pkg/kubelet/qos: OOM score adjustments; pkg/kubelet/kuberuntime: the
// resources of containers and sandboxes) and containerd v2.4's
// (internal/cri: cgroups paths, resources in the OCI spec and in NRI).
// The nri tool's simulator and the conformance checker share them, so
// that a resource-policy plugin sees the pods a node would show it. Not
// modelled: init and sidecar containers, pod-level resources, hugepages,
// swap, CPU manager cpusets and the cgroup v2 memory.oom.group setting.
package kubepod

import (
	"bufio"
	"bytes"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// Resources are CPU and memory as a Kubernetes resource list gives them;
// zero means not set (a zero quantity counts as unset in Kubernetes too).
type Resources struct {
	// MilliCPU is CPU in thousandths of a CPU ("250m" is 250, "2" is
	// 2000).
	MilliCPU int64
	// Memory is bytes.
	Memory int64
}

// IsZero reports whether neither resource is set.
func (r Resources) IsZero() bool { return r.MilliCPU == 0 && r.Memory == 0 }

// Container is a container's resource requirements, as written in a pod
// spec.
type Container struct {
	Requests, Limits Resources
}

// effectiveRequests are the requests after the API server's defaulting:
// a resource with a limit and no request requests its limit.
func (c Container) effectiveRequests() Resources {
	r := c.Requests
	if r.MilliCPU == 0 {
		r.MilliCPU = c.Limits.MilliCPU
	}
	if r.Memory == 0 {
		r.Memory = c.Limits.Memory
	}
	return r
}

// Pod is a pod: its UID, its containers (regular containers, in order)
// and its overhead (from its RuntimeClass).
type Pod struct {
	UID        string
	Containers []Container
	Overhead   Resources
}

// QOSClass is a pod's quality of service class.
type QOSClass string

// The QoS classes.
const (
	Guaranteed QOSClass = "Guaranteed"
	Burstable  QOSClass = "Burstable"
	BestEffort QOSClass = "BestEffort"
)

// QOSClass returns the pod's class as Kubernetes computes it: BestEffort
// if no container requests or limits CPU or memory, Guaranteed if every
// container's requests equal its limits for both, Burstable otherwise. A
// pod without containers is BestEffort.
func (p Pod) QOSClass() QOSClass {
	var class QOSClass
	for _, c := range p.Containers {
		cc := c.qosClass()
		switch {
		case cc == Burstable:
			return Burstable
		case class == "":
			class = cc
		case class != cc:
			return Burstable
		}
	}
	if class == "" {
		return BestEffort
	}
	return class
}

// qosClass is the class of a pod of this one container.
func (c Container) qosClass() QOSClass {
	req, lim := c.effectiveRequests(), c.Limits
	var class QOSClass
	for _, pair := range [][2]int64{{req.MilliCPU, lim.MilliCPU}, {req.Memory, lim.Memory}} {
		rc := Guaranteed
		switch {
		case pair[0] != pair[1]:
			return Burstable
		case pair[0] == 0:
			rc = BestEffort
		}
		if class != "" && class != rc {
			return Burstable
		}
		class = rc
	}
	return class
}

// CgroupDriver is how kubelet names cgroups: kubelet's cgroupDriver.
type CgroupDriver string

// The cgroup drivers.
const (
	Systemd  CgroupDriver = "systemd"
	Cgroupfs CgroupDriver = "cgroupfs"
)

// Node is what of a node shapes its pods' descriptions.
type Node struct {
	// CgroupDriver is kubelet's cgroup driver; "" is Systemd.
	CgroupDriver CgroupDriver
	// MemoryCapacity is the node's memory in bytes, which Burstable
	// containers' OOM score adjustments are relative to; it must be
	// positive.
	MemoryCapacity int64
}

// PodCgroupParent is the cgroup parent kubelet gives the pod (CRI's
// LinuxPodSandboxConfig.cgroup_parent, NRI's LinuxPodSandbox.cgroup_parent):
// kubepods, then burstable or besteffort unless the pod is Guaranteed,
// then pod<UID>, with the systemd driver as nested slices
// ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID>.slice",
// the UID's dashes turned to underscores), with cgroupfs as a path
// ("/kubepods/burstable/pod<UID>").
func (n Node) PodCgroupParent(p Pod) string {
	parts := []string{"kubepods"}
	switch p.QOSClass() {
	case Burstable:
		parts = append(parts, "burstable")
	case BestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+p.UID)
	if n.CgroupDriver == Cgroupfs {
		return "/" + strings.Join(parts, "/")
	}
	// systemd's slice names: each part escaped, each level a slice
	// named after all levels above it.
	var path, name strings.Builder
	for i, part := range parts {
		if i > 0 {
			name.WriteByte('-')
		}
		name.WriteString(strings.ReplaceAll(part, "-", "_"))
		path.WriteString("/" + name.String() + ".slice")
	}
	return path.String()
}

// CgroupsPath is the cgroups path containerd gives the sandbox or
// container id under the cgroup parent: "SLICE:cri-containerd:ID" for a
// systemd slice (its last element), "PARENT/ID" otherwise.
func CgroupsPath(parent, id string) string {
	base := parent[strings.LastIndexByte(parent, '/')+1:]
	if strings.HasSuffix(base, ".slice") {
		return base + ":cri-containerd:" + id
	}
	return strings.TrimSuffix(parent, "/") + "/" + id
}

// Kubelet's CPU constants (pkg/kubelet/cm).
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	quotaPeriod    = 100000 // µs
	minQuotaPeriod = 1000   // µs
)

// cpuShares converts a CPU request to cgroup CPU shares as kubelet does.
func cpuShares(milliCPU int64) uint64 {
	milliCPU = min(milliCPU, maxShares*1000/sharesPerCPU+1) // beyond it, the maximum
	shares := milliCPU * sharesPerCPU / 1000
	return uint64(min(max(shares, minShares), maxShares))
}

// cpuQuota converts a CPU limit to a CFS quota over quotaPeriod as
// kubelet does; 0 for no limit.
func cpuQuota(milliCPU int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	milliCPU = min(milliCPU, math.MaxInt64/quotaPeriod)
	return max(milliCPU*quotaPeriod/1000, minQuotaPeriod)
}

// add adds non-negative quantities, saturating at the largest int64.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// criResources are CRI's LinuxContainerResources as kubelet computes them
// (calculateLinuxResources): shares from the CPU request, quota over the
// default period from the CPU limit, the memory limit.
type criResources struct {
	shares uint64
	quota  int64
	period uint64
	memory int64
}

func calculate(cpuRequest, cpuLimit, memoryLimit int64) criResources {
	return criResources{shares: cpuShares(cpuRequest), quota: cpuQuota(cpuLimit), period: quotaPeriod, memory: memoryLimit}
}

// nri converts CRI resources to NRI's as containerd does for pods
// (fromCRILinuxResources): every value set, zeros included.
func (r criResources) nri() *api.LinuxResources {
	return &api.LinuxResources{
		Cpu: &api.LinuxCPU{
			Shares: &api.OptionalUInt64{Value: r.shares},
			Quota:  &api.OptionalInt64{Value: r.quota},
			Period: &api.OptionalUInt64{Value: r.period},
		},
		Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: r.memory}},
	}
}

// PodResources is the pod's LinuxPodSandbox.pod_resources: the sums of
// its containers' requests and limits, without overhead, as kubelet
// computes the sandbox's resources.
func (p Pod) PodResources() *api.LinuxResources {
	var req, lim Resources
	for _, c := range p.Containers {
		r := c.effectiveRequests()
		req.MilliCPU, req.Memory = add(req.MilliCPU, r.MilliCPU), add(req.Memory, r.Memory)
		lim.MilliCPU, lim.Memory = add(lim.MilliCPU, c.Limits.MilliCPU), add(lim.Memory, c.Limits.Memory)
	}
	return calculate(req.MilliCPU, lim.MilliCPU, lim.Memory).nri()
}

// PodOverhead is the pod's LinuxPodSandbox.pod_overhead: the overhead as
// both request and limit, or all zeros without overhead (kubelet sends
// empty resources, which containerd passes on as zeros).
func (p Pod) PodOverhead() *api.LinuxResources {
	if p.Overhead.IsZero() {
		return criResources{}.nri()
	}
	return calculate(p.Overhead.MilliCPU, p.Overhead.MilliCPU, p.Overhead.Memory).nri()
}

// SandboxResources are the resources of a pod's sandbox (pause)
// container, LinuxPodSandbox.resources: containerd's default of 2 CPU
// shares and its device rule denying all devices.
func SandboxResources() *api.LinuxResources {
	return &api.LinuxResources{
		Cpu:     &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: minShares}},
		Devices: []*api.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	}
}

// ContainerResources are container i's Linux resources as containerd
// puts them into its OCI spec (and NRI's LinuxContainer.resources): CPU
// shares from the request, the default CFS period, a quota from a CPU
// limit, a memory limit if there is one, and the device rule denying all
// devices.
func (p Pod) ContainerResources(i int) *api.LinuxResources {
	c := p.Containers[i]
	r := calculate(c.effectiveRequests().MilliCPU, c.Limits.MilliCPU, c.Limits.Memory)
	out := &api.LinuxResources{
		Cpu: &api.LinuxCPU{
			Shares: &api.OptionalUInt64{Value: r.shares},
			Period: &api.OptionalUInt64{Value: r.period},
		},
		Memory:  &api.LinuxMemory{},
		Devices: []*api.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	}
	if r.quota != 0 {
		out.Cpu.Quota = &api.OptionalInt64{Value: r.quota}
	}
	if r.memory != 0 {
		out.Memory.Limit = &api.OptionalInt64{Value: r.memory}
	}
	return out
}

// OOM score adjustments of kubelet's QoS policy.
const (
	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// OOMScoreAdj is container i's OOM score adjustment: -997 in a
// Guaranteed pod, 1000 in a BestEffort one; in a Burstable pod 1000 less
// the container's share of the node's memory in thousandths, kept within
// 3 and 999.
func (n Node) OOMScoreAdj(p Pod, i int) int {
	switch p.QOSClass() {
	case Guaranteed:
		return guaranteedOOMScoreAdj
	case BestEffort:
		return bestEffortOOMScoreAdj
	}
	adj := 1000 - thousandths(p.Containers[i].effectiveRequests().Memory, n.MemoryCapacity)
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == bestEffortOOMScoreAdj:
		return bestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

// thousandths returns 1000*part/whole rounded down, without overflow, or
// 1000 if part is whole or more (or whole is not positive).
func thousandths(part, whole int64) int64 {
	if whole <= 0 || part >= whole {
		return 1000
	}
	hi, lo := bits.Mul64(uint64(max(part, 0)), 1000)
	q, _ := bits.Div64(hi, lo, uint64(whole))
	return int64(q)
}

// DefaultMemoryCapacity is MachineMemory's answer when it cannot read the
// machine's memory: 16 GiB.
const DefaultMemoryCapacity = 16 << 30

// MachineMemory is this machine's memory as kubelet reads it for the
// node's capacity (MemTotal of /proc/meminfo), or DefaultMemoryCapacity.
// A resource-policy plugin reads the same, so a node of this capacity
// gives it OOM score adjustments it can turn back into memory requests.
func MachineMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return DefaultMemoryCapacity
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil || kb <= 0 || kb > 1<<50 {
			break
		}
		return kb << 10
	}
	return DefaultMemoryCapacity
}
