package merge

import (
	"github.com/nrikit/nrikit/api"
)

// resourceField is one simple (single-owner) field of LinuxResources.
type resourceField struct {
	field api.Field
	isSet func(src *api.LinuxResources) bool
	copy  func(dst, src *api.LinuxResources)
}

// resourceFields lists the simple resource fields in upstream's order.
// It is a read-only table.
var resourceFields = []resourceField{
	{api.Field_MemLimit,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetLimit() != nil },
		func(d, s *api.LinuxResources) { memOf(d).Limit = api.Int64(s.Memory.Limit) }},
	{api.Field_MemReservation,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetReservation() != nil },
		func(d, s *api.LinuxResources) { memOf(d).Reservation = api.Int64(s.Memory.Reservation) }},
	{api.Field_MemSwapLimit,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetSwap() != nil },
		func(d, s *api.LinuxResources) { memOf(d).Swap = api.Int64(s.Memory.Swap) }},
	{api.Field_MemKernelLimit,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetKernel() != nil },
		func(d, s *api.LinuxResources) { memOf(d).Kernel = api.Int64(s.Memory.Kernel) }},
	{api.Field_MemTCPLimit,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetKernelTcp() != nil },
		func(d, s *api.LinuxResources) { memOf(d).KernelTcp = api.Int64(s.Memory.KernelTcp) }},
	{api.Field_MemSwappiness,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetSwappiness() != nil },
		func(d, s *api.LinuxResources) { memOf(d).Swappiness = api.UInt64(s.Memory.Swappiness) }},
	{api.Field_MemDisableOomKiller,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetDisableOomKiller() != nil },
		func(d, s *api.LinuxResources) { memOf(d).DisableOomKiller = api.Bool(s.Memory.DisableOomKiller) }},
	{api.Field_MemUseHierarchy,
		func(s *api.LinuxResources) bool { return s.GetMemory().GetUseHierarchy() != nil },
		func(d, s *api.LinuxResources) { memOf(d).UseHierarchy = api.Bool(s.Memory.UseHierarchy) }},
	{api.Field_CPUShares,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetShares() != nil },
		func(d, s *api.LinuxResources) { cpuOf(d).Shares = api.UInt64(s.Cpu.Shares) }},
	{api.Field_CPUQuota,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetQuota() != nil },
		func(d, s *api.LinuxResources) { cpuOf(d).Quota = api.Int64(s.Cpu.Quota) }},
	{api.Field_CPUPeriod,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetPeriod() != nil },
		func(d, s *api.LinuxResources) { cpuOf(d).Period = api.UInt64(s.Cpu.Period) }},
	{api.Field_CPURealtimeRuntime,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetRealtimeRuntime() != nil },
		func(d, s *api.LinuxResources) { cpuOf(d).RealtimeRuntime = api.Int64(s.Cpu.RealtimeRuntime) }},
	{api.Field_CPURealtimePeriod,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetRealtimePeriod() != nil },
		func(d, s *api.LinuxResources) { cpuOf(d).RealtimePeriod = api.UInt64(s.Cpu.RealtimePeriod) }},
	{api.Field_CPUSetCPUs,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetCpus() != "" },
		func(d, s *api.LinuxResources) { cpuOf(d).Cpus = s.Cpu.Cpus }},
	{api.Field_CPUSetMems,
		func(s *api.LinuxResources) bool { return s.GetCpu().GetMems() != "" },
		func(d, s *api.LinuxResources) { cpuOf(d).Mems = s.Cpu.Mems }},
	{api.Field_BlockioClass,
		func(s *api.LinuxResources) bool { return s.GetBlockioClass() != nil },
		func(d, s *api.LinuxResources) { d.BlockioClass = api.String(s.BlockioClass) }},
	{api.Field_RdtClass,
		func(s *api.LinuxResources) bool { return s.GetRdtClass() != nil },
		func(d, s *api.LinuxResources) { d.RdtClass = api.String(s.RdtClass) }},
	{api.Field_PidsLimit,
		func(s *api.LinuxResources) bool { return s.GetPids() != nil },
		func(d, s *api.LinuxResources) { d.Pids = &api.LinuxPids{Limit: s.Pids.Limit} }},
}

// mergeResources merges a plugin's resource changes for container id into
// each of dsts (allocating accessors, evaluated at commit). Simple fields
// have one owner each; hugepage limits are owned per page size and
// unified cgroup entries per key. Device cgroup rules carry no ownership
// and are merged only if withDevices is set (upstream ignores them in
// updates).
func mergeResources(tx *txn, id, plugin string, src *api.LinuxResources, withDevices bool, dsts ...func() *api.LinuxResources) error {
	if src == nil {
		return nil
	}
	for _, f := range resourceFields {
		if !f.isSet(src) {
			continue
		}
		if err := tx.claim(simpleKey(id, f.field), plugin); err != nil {
			return err
		}
		tx.then(func() {
			for _, dst := range dsts {
				f.copy(dst(), src)
			}
		})
	}
	for _, l := range src.HugepageLimits {
		if l == nil {
			continue
		}
		if err := tx.claim(entryKey(id, api.Field_HugepageLimits, l.PageSize), plugin); err != nil {
			return err
		}
		tx.then(func() {
			for _, dst := range dsts {
				d := dst()
				d.HugepageLimits = append(d.HugepageLimits, api.Clone(l))
			}
		})
	}
	if withDevices && len(src.Devices) > 0 {
		tx.then(func() {
			for _, dst := range dsts {
				d := dst()
				for _, dev := range src.Devices {
					if dev != nil {
						d.Devices = append(d.Devices, api.Clone(dev))
					}
				}
			}
		})
	}
	for _, k := range sortedKeys(src.Unified) {
		if err := tx.claim(entryKey(id, api.Field_CgroupsUnified, k), plugin); err != nil {
			return err
		}
		v := src.Unified[k]
		tx.then(func() {
			for _, dst := range dsts {
				ensureMap(&dst().Unified)[k] = v
			}
		})
	}
	return nil
}
