package api_test

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestUpdateBuilders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(u *api.ContainerUpdate)
		want  *api.ContainerUpdate
	}{
		{"id and ignore failure", func(u *api.ContainerUpdate) {
			u.SetContainerId("c1")
			u.SetIgnoreFailure()
		}, &api.ContainerUpdate{ContainerId: "c1", IgnoreFailure: true}},
		{"memory", func(u *api.ContainerUpdate) {
			u.SetLinuxMemoryLimit(1000)
			u.SetLinuxMemoryReservation(900)
			u.SetLinuxMemorySwap(2000)
			u.SetLinuxMemoryKernel(300)
			u.SetLinuxMemoryKernelTCP(200)
			u.SetLinuxMemorySwappiness(60)
			u.SetLinuxMemoryDisableOomKiller()
			u.SetLinuxMemoryUseHierarchy()
		}, &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Memory: &api.LinuxMemory{
				Limit: &api.OptionalInt64{Value: 1000}, Reservation: &api.OptionalInt64{Value: 900},
				Swap: &api.OptionalInt64{Value: 2000}, Kernel: &api.OptionalInt64{Value: 300},
				KernelTcp: &api.OptionalInt64{Value: 200}, Swappiness: &api.OptionalUInt64{Value: 60},
				DisableOomKiller: &api.OptionalBool{Value: true}, UseHierarchy: &api.OptionalBool{Value: true},
			}}}}},
		{"cpu", func(u *api.ContainerUpdate) {
			u.SetLinuxCPUShares(512)
			u.SetLinuxCPUQuota(50000)
			u.SetLinuxCPUPeriod(100000)
			u.SetLinuxCPURealtimeRuntime(1000)
			u.SetLinuxCPURealtimePeriod(2000)
			u.SetLinuxCPUSetCPUs("0-3")
			u.SetLinuxCPUSetMems("0")
		}, &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Cpu: &api.LinuxCPU{
				Shares: &api.OptionalUInt64{Value: 512}, Quota: &api.OptionalInt64{Value: 50000},
				Period: &api.OptionalUInt64{Value: 100000}, RealtimeRuntime: &api.OptionalInt64{Value: 1000},
				RealtimePeriod: &api.OptionalUInt64{Value: 2000}, Cpus: "0-3", Mems: "0",
			}}}}},
		{"other resources", func(u *api.ContainerUpdate) {
			u.SetLinuxPidLimits(100)
			u.AddLinuxHugepageLimit("2MB", 4096)
			u.SetLinuxBlockIOClass("slow")
			u.SetLinuxRDTClass("gold")
			u.AddLinuxUnified("memory.high", "1G")
			u.AddLinuxUnified("memory.max", "2G")
		}, &api.ContainerUpdate{Linux: &api.LinuxContainerUpdate{Resources: &api.LinuxResources{
			Pids:           &api.LinuxPids{Limit: 100},
			HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4096}},
			BlockioClass:   &api.OptionalString{Value: "slow"},
			RdtClass:       &api.OptionalString{Value: "gold"},
			Unified:        map[string]string{"memory.high": "1G", "memory.max": "2G"},
		}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &api.ContainerUpdate{}
			tc.build(u)
			checkMessage(t, tc.name, u, tc.want)
		})
	}
}
