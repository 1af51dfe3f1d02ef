package kubepod

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

const (
	mi = 1 << 20
	gi = 1 << 30
)

// The pods of the tests, one per QoS class, and the expected values, from
// kubelet v1.37's formulas worked by hand.
var (
	guaranteed = Pod{UID: "1234-abcd", Containers: []Container{
		{Requests: Resources{2000, gi}, Limits: Resources{2000, gi}},
		{Limits: Resources{500, 256 * mi}}, // requests default to limits
	}}
	burstable = Pod{UID: "5678-efgh", Containers: []Container{
		{Requests: Resources{250, 256 * mi}, Limits: Resources{1000, 512 * mi}},
		{},
	}, Overhead: Resources{250, 120 * mi}}
	bestEffort = Pod{UID: "9abc"}
)

func TestQOSClass(t *testing.T) {
	tests := []struct {
		name string
		pod  Pod
		want QOSClass
	}{
		{"requests equal limits", guaranteed, Guaranteed},
		{"requests below limits", burstable, Burstable},
		{"no containers", bestEffort, BestEffort},
		{"no requests or limits", Pod{Containers: []Container{{}, {}}}, BestEffort},
		{"CPU limit only", Pod{Containers: []Container{{Limits: Resources{MilliCPU: 500}}}}, Burstable},
		{"memory request only", Pod{Containers: []Container{{Requests: Resources{Memory: mi}}}}, Burstable},
		{"a Guaranteed and a BestEffort container", Pod{Containers: []Container{{Limits: Resources{100, mi}}, {}}}, Burstable},
	}
	for _, tt := range tests {
		if got := tt.pod.QOSClass(); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestPodCgroupParent(t *testing.T) {
	systemd, cgroupfs := Node{}, Node{CgroupDriver: Cgroupfs}
	tests := []struct {
		node                Node
		pod                 Pod
		wantParent, wantCtr string
	}{
		// kubelet's own example (cgroup_manager_linux.go, ToSystemd).
		{systemd, Pod{UID: "1234-abcd-5678-efgh", Containers: burstable.Containers},
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice",
			"kubepods-burstable-pod1234_abcd_5678_efgh.slice:cri-containerd:c1"},
		{systemd, guaranteed, "/kubepods.slice/kubepods-pod1234_abcd.slice", "kubepods-pod1234_abcd.slice:cri-containerd:c1"},
		{systemd, bestEffort, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9abc.slice",
			"kubepods-besteffort-pod9abc.slice:cri-containerd:c1"},
		{cgroupfs, burstable, "/kubepods/burstable/pod5678-efgh", "/kubepods/burstable/pod5678-efgh/c1"},
		{cgroupfs, guaranteed, "/kubepods/pod1234-abcd", "/kubepods/pod1234-abcd/c1"},
		{cgroupfs, bestEffort, "/kubepods/besteffort/pod9abc", "/kubepods/besteffort/pod9abc/c1"},
	}
	for _, tt := range tests {
		parent := tt.node.PodCgroupParent(tt.pod)
		if parent != tt.wantParent {
			t.Errorf("%s pod, %q driver: parent %q, want %q", tt.pod.QOSClass(), tt.node.CgroupDriver, parent, tt.wantParent)
		}
		if got := CgroupsPath(parent, "c1"); got != tt.wantCtr {
			t.Errorf("cgroups path under %q: %q, want %q", parent, got, tt.wantCtr)
		}
	}
}

// res builds expected NRI resources; a negative quota or limit is unset.
func res(shares uint64, quota int64, period uint64, limit int64) *api.LinuxResources {
	r := &api.LinuxResources{
		Cpu:     &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: shares}, Period: &api.OptionalUInt64{Value: period}},
		Memory:  &api.LinuxMemory{},
		Devices: []*api.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	}
	if quota >= 0 {
		r.Cpu.Quota = &api.OptionalInt64{Value: quota}
	}
	if limit >= 0 {
		r.Memory.Limit = &api.OptionalInt64{Value: limit}
	}
	return r
}

// podRes builds expected pod resources: every value set, no devices.
func podRes(shares uint64, quota int64, period uint64, limit int64) *api.LinuxResources {
	r := res(shares, quota, period, limit)
	r.Devices = nil
	return r
}

func TestResources(t *testing.T) {
	tests := []struct {
		name string
		got  *api.LinuxResources
		want *api.LinuxResources
	}{
		{"Guaranteed, 2 CPUs", guaranteed.ContainerResources(0), res(2048, 200000, 100000, gi)},
		{"Guaranteed, limits only", guaranteed.ContainerResources(1), res(512, 50000, 100000, 256*mi)},
		{"Burstable", burstable.ContainerResources(0), res(256, 100000, 100000, 512*mi)},
		{"Burstable pod, no requests", burstable.ContainerResources(1), res(2, -1, 100000, -1)},
		{"1m CPU: minimal shares and quota", Pod{Containers: []Container{{Limits: Resources{MilliCPU: 1}}}}.ContainerResources(0), res(2, 1000, 100000, -1)},
		{"a million CPUs: maximal shares", Pod{Containers: []Container{{Requests: Resources{MilliCPU: 1e9}}}}.ContainerResources(0), res(262144, -1, 100000, -1)},
		{"Guaranteed pod", guaranteed.PodResources(), podRes(2560, 250000, 100000, gi+256*mi)},
		{"Burstable pod", burstable.PodResources(), podRes(256, 100000, 100000, 512*mi)},
		{"BestEffort pod", bestEffort.PodResources(), podRes(2, 0, 100000, 0)},
		{"overhead", burstable.PodOverhead(), podRes(256, 25000, 100000, 120*mi)},
		{"no overhead", guaranteed.PodOverhead(), podRes(0, 0, 0, 0)},
		{"sandbox", SandboxResources(), &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 2}},
			Devices: []*api.LinuxDeviceCgroup{{Access: "rwm"}}}},
	}
	for _, tt := range tests {
		if !proto.Equal(tt.got, tt.want) {
			t.Errorf("%s:\n got %v\nwant %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestOOMScoreAdj(t *testing.T) {
	node := Node{MemoryCapacity: 16 * gi}
	tests := []struct {
		name string
		pod  Pod
		i    int
		want int
	}{
		{"Guaranteed", guaranteed, 1, -997},
		{"BestEffort", Pod{Containers: []Container{{}}}, 0, 1000},
		// 1000 - 1000*256Mi/16Gi = 1000 - 15.6
		{"Burstable, 256Mi of 16Gi", burstable, 0, 985},
		{"Burstable, no memory request", burstable, 1, 999},
		{"Burstable, all the node's memory", Pod{Containers: []Container{{Requests: Resources{Memory: 16 * gi}}}}, 0, 3},
		{"Burstable, more than int64 can multiply", Pod{Containers: []Container{{Requests: Resources{Memory: math.MaxInt64 / 2}}}}, 0, 3},
	}
	for _, tt := range tests {
		if got := node.OOMScoreAdj(tt.pod, tt.i); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	huge := Node{MemoryCapacity: math.MaxInt64}
	if got := huge.OOMScoreAdj(Pod{Containers: []Container{{Requests: Resources{Memory: math.MaxInt64 / 2}}}}, 0); got != 501 { // 1000 - floor(499.99...)
		t.Errorf("half of the largest node: %d, want 501", got)
	}
}

func TestSumsSaturate(t *testing.T) {
	pod := Pod{Containers: []Container{{Limits: Resources{Memory: math.MaxInt64}}, {Limits: Resources{Memory: math.MaxInt64}}}}
	if got := pod.PodResources().GetMemory().GetLimit().GetValue(); got != math.MaxInt64 {
		t.Errorf("the sum of two maximal limits is %d, want it saturated", got)
	}
}

func TestMachineMemory(t *testing.T) {
	m := MachineMemory()
	if m <= 0 || m%1024 != 0 {
		t.Errorf("MachineMemory() = %d, want a positive number of KiB", m)
	}
}
