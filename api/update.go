package api

// Builders for ContainerUpdate, a plugin's request to change the resources
// of an existing container. Each builder allocates the sub-messages it
// needs, so they can be called on a zero &ContainerUpdate{}. Names and
// semantics follow containerd/nri.

// SetContainerId sets the ID of the container to update.
//
//nolint:revive // upstream's name, kept so plugins port unchanged.
func (u *ContainerUpdate) SetContainerId(id string) {
	u.ContainerId = id
}

// SetIgnoreFailure marks the update as optional: if it fails (or conflicts
// with another plugin's update), the operation that prompted it proceeds.
func (u *ContainerUpdate) SetIgnoreFailure() {
	u.IgnoreFailure = true
}

// SetLinuxMemoryLimit records setting the memory limit (bytes).
func (u *ContainerUpdate) SetLinuxMemoryLimit(value int64) {
	u.resources().memory().Limit = Int64(value)
}

// SetLinuxMemoryReservation records setting the memory reservation (bytes).
func (u *ContainerUpdate) SetLinuxMemoryReservation(value int64) {
	u.resources().memory().Reservation = Int64(value)
}

// SetLinuxMemorySwap records setting the memory+swap limit (bytes).
func (u *ContainerUpdate) SetLinuxMemorySwap(value int64) {
	u.resources().memory().Swap = Int64(value)
}

// SetLinuxMemoryKernel records setting the kernel memory limit (bytes).
func (u *ContainerUpdate) SetLinuxMemoryKernel(value int64) {
	u.resources().memory().Kernel = Int64(value)
}

// SetLinuxMemoryKernelTCP records setting the kernel TCP buffer memory
// limit (bytes).
func (u *ContainerUpdate) SetLinuxMemoryKernelTCP(value int64) {
	u.resources().memory().KernelTcp = Int64(value)
}

// SetLinuxMemorySwappiness records setting the memory swappiness.
func (u *ContainerUpdate) SetLinuxMemorySwappiness(value uint64) {
	u.resources().memory().Swappiness = UInt64(value)
}

// SetLinuxMemoryDisableOomKiller records disabling the OOM killer.
func (u *ContainerUpdate) SetLinuxMemoryDisableOomKiller() {
	u.resources().memory().DisableOomKiller = Bool(true)
}

// SetLinuxMemoryUseHierarchy records enabling hierarchical memory
// accounting.
func (u *ContainerUpdate) SetLinuxMemoryUseHierarchy() {
	u.resources().memory().UseHierarchy = Bool(true)
}

// SetLinuxCPUShares records setting the CPU shares (relative weight).
func (u *ContainerUpdate) SetLinuxCPUShares(value uint64) {
	u.resources().cpu().Shares = UInt64(value)
}

// SetLinuxCPUQuota records setting the CFS quota (µs per period).
func (u *ContainerUpdate) SetLinuxCPUQuota(value int64) {
	u.resources().cpu().Quota = Int64(value)
}

// SetLinuxCPUPeriod records setting the CFS period (µs). The value is
// signed for compatibility with upstream; it is stored unsigned.
func (u *ContainerUpdate) SetLinuxCPUPeriod(value int64) {
	u.resources().cpu().Period = UInt64(value)
}

// SetLinuxCPURealtimeRuntime records setting the realtime runtime (µs).
func (u *ContainerUpdate) SetLinuxCPURealtimeRuntime(value int64) {
	u.resources().cpu().RealtimeRuntime = Int64(value)
}

// SetLinuxCPURealtimePeriod records setting the realtime period (µs).
func (u *ContainerUpdate) SetLinuxCPURealtimePeriod(value uint64) {
	u.resources().cpu().RealtimePeriod = UInt64(value)
}

// SetLinuxCPUSetCPUs records setting the cpuset CPUs (e.g. "0-3,7").
func (u *ContainerUpdate) SetLinuxCPUSetCPUs(value string) {
	u.resources().cpu().Cpus = value
}

// SetLinuxCPUSetMems records setting the cpuset memory nodes (e.g. "0,1").
func (u *ContainerUpdate) SetLinuxCPUSetMems(value string) {
	u.resources().cpu().Mems = value
}

// SetLinuxPidLimits records setting the maximum number of pids.
func (u *ContainerUpdate) SetLinuxPidLimits(value int64) {
	u.resources().Pids = &LinuxPids{Limit: value}
}

// AddLinuxHugepageLimit records limiting huge pages of pageSize (e.g.
// "2MB") to value bytes.
func (u *ContainerUpdate) AddLinuxHugepageLimit(pageSize string, value uint64) {
	u.resources().addHugepageLimit(pageSize, value)
}

// SetLinuxBlockIOClass records setting the block I/O class.
func (u *ContainerUpdate) SetLinuxBlockIOClass(value string) {
	u.resources().BlockioClass = String(value)
}

// SetLinuxRDTClass records setting the RDT class.
func (u *ContainerUpdate) SetLinuxRDTClass(value string) {
	u.resources().RdtClass = String(value)
}

// AddLinuxUnified records setting the cgroup v2 unified resource key.
func (u *ContainerUpdate) AddLinuxUnified(key, value string) {
	u.resources().unified()[key] = value
}

func (u *ContainerUpdate) resources() *LinuxResources {
	if u.Linux == nil {
		u.Linux = &LinuxContainerUpdate{}
	}
	if u.Linux.Resources == nil {
		u.Linux.Resources = &LinuxResources{}
	}
	return u.Linux.Resources
}
