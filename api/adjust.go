package api

import "slices"

// Builders for ContainerAdjustment, the change a plugin asks for in answer
// to CreateContainer. Each builder allocates the sub-messages it needs, so
// they can be called on a zero &ContainerAdjustment{}. Names and semantics
// follow containerd/nri so that plugins port unchanged.
//
// Keyed entries (annotations, mounts, environment variables, devices,
// namespaces, sysctls, network devices) can be removed with the Remove*
// builders, which record the key with a removal marker (see MarkForRemoval).
// A plugin that wants to replace an entry another plugin has set removes it
// first and then adds its own; without the removal that is a conflict.
// Values passed by pointer are copied, so the caller may reuse them.

// AddAnnotation records setting the annotation key to value.
func (a *ContainerAdjustment) AddAnnotation(key, value string) {
	a.annotations()[key] = value
}

// RemoveAnnotation records the removal of the annotation key.
func (a *ContainerAdjustment) RemoveAnnotation(key string) {
	a.annotations()[MarkForRemoval(key)] = ""
}

// AddMount records the addition of a mount (a copy of m).
func (a *ContainerAdjustment) AddMount(m *Mount) {
	if m != nil {
		a.Mounts = append(a.Mounts, Clone(m))
	}
}

// RemoveMount records the removal of the mount at destination.
func (a *ContainerAdjustment) RemoveMount(destination string) {
	a.Mounts = append(a.Mounts, &Mount{Destination: MarkForRemoval(destination)})
}

// AddEnv records setting the environment variable key to value.
func (a *ContainerAdjustment) AddEnv(key, value string) {
	a.Env = append(a.Env, &KeyValue{Key: key, Value: value})
}

// RemoveEnv records the removal of the environment variable key.
func (a *ContainerAdjustment) RemoveEnv(key string) {
	a.Env = append(a.Env, &KeyValue{Key: MarkForRemoval(key)})
}

// SetArgs records replacing the container's command line with args. It
// conflicts with another plugin that also sets the command line.
func (a *ContainerAdjustment) SetArgs(args []string) {
	a.Args = slices.Clone(args)
}

// UpdateArgs records replacing the container's command line with args,
// overriding (instead of conflicting with) a command line an earlier plugin
// set. On the wire the arguments are preceded by an empty string, the
// removal marker for the command line.
func (a *ContainerAdjustment) UpdateArgs(args []string) {
	a.Args = append([]string{""}, args...)
}

// AddHooks records the addition of the OCI hooks in h (appended to any
// hooks already recorded; hooks of several plugins accumulate).
func (a *ContainerAdjustment) AddHooks(h *Hooks) {
	if h == nil {
		return
	}
	h = Clone(h)
	if a.Hooks == nil {
		a.Hooks = &Hooks{}
	}
	a.Hooks.Prestart = append(a.Hooks.Prestart, h.Prestart...)
	a.Hooks.CreateRuntime = append(a.Hooks.CreateRuntime, h.CreateRuntime...)
	a.Hooks.CreateContainer = append(a.Hooks.CreateContainer, h.CreateContainer...)
	a.Hooks.StartContainer = append(a.Hooks.StartContainer, h.StartContainer...)
	a.Hooks.Poststart = append(a.Hooks.Poststart, h.Poststart...)
	a.Hooks.Poststop = append(a.Hooks.Poststop, h.Poststop...)
}

// AddRlimit records setting the POSIX resource limit typ (e.g.
// "RLIMIT_NOFILE") to the given hard and soft values.
func (a *ContainerAdjustment) AddRlimit(typ string, hard, soft uint64) {
	a.Rlimits = append(a.Rlimits, &POSIXRlimit{Type: typ, Hard: hard, Soft: soft})
}

// AddCDIDevice records the injection of a CDI device (a copy of d). CDI
// devices are resolved by the runtime; they cannot be removed.
func (a *ContainerAdjustment) AddCDIDevice(d *CDIDevice) {
	if d != nil {
		a.CDIDevices = append(a.CDIDevices, Clone(d))
	}
}

// AddDevice records the addition of a device node (a copy of d).
func (a *ContainerAdjustment) AddDevice(d *LinuxDevice) {
	if d != nil {
		l := a.linux()
		l.Devices = append(l.Devices, Clone(d))
	}
}

// RemoveDevice records the removal of the device node at path.
func (a *ContainerAdjustment) RemoveDevice(path string) {
	l := a.linux()
	l.Devices = append(l.Devices, &LinuxDevice{Path: MarkForRemoval(path)})
}

// AddOrReplaceNamespace records joining (or replacing) the namespace of
// n's type with n (a copy).
func (a *ContainerAdjustment) AddOrReplaceNamespace(n *LinuxNamespace) {
	if n != nil {
		l := a.linux()
		l.Namespaces = append(l.Namespaces, Clone(n))
	}
}

// RemoveNamespace records the removal of the namespace of n's type.
func (a *ContainerAdjustment) RemoveNamespace(n *LinuxNamespace) {
	if n != nil {
		l := a.linux()
		l.Namespaces = append(l.Namespaces, &LinuxNamespace{Type: MarkForRemoval(n.Type)})
	}
}

// SetLinuxSysctl records setting the sysctl key to value.
func (a *ContainerAdjustment) SetLinuxSysctl(key, value string) {
	a.sysctl()[key] = value
}

// RemoveLinuxSysctl records the removal of the sysctl key.
func (a *ContainerAdjustment) RemoveLinuxSysctl(key string) {
	a.sysctl()[MarkForRemoval(key)] = ""
}

// AddLinuxNetDevice records moving the host network interface hostDev
// into the container as d (a copy). A nil d is ignored.
func (a *ContainerAdjustment) AddLinuxNetDevice(hostDev string, d *LinuxNetDevice) {
	if d != nil {
		a.netDevices()[hostDev] = Clone(d)
	}
}

// RemoveLinuxNetDevice records the removal of the host network interface
// hostDev from the container.
func (a *ContainerAdjustment) RemoveLinuxNetDevice(hostDev string) {
	a.netDevices()[MarkForRemoval(hostDev)] = nil
}

// SetLinuxCgroupsPath records setting the container's cgroups path.
func (a *ContainerAdjustment) SetLinuxCgroupsPath(path string) {
	a.linux().CgroupsPath = path
}

// SetLinuxOomScoreAdj records setting the container's OOM score adjustment;
// a nil value records no adjustment.
func (a *ContainerAdjustment) SetLinuxOomScoreAdj(value *int) {
	a.linux().OomScoreAdj = Int(value)
}

// SetLinuxIOPriority records setting the container's I/O priority (a copy
// of p).
func (a *ContainerAdjustment) SetLinuxIOPriority(p *LinuxIOPriority) {
	a.linux().IoPriority = Clone(p)
}

// SetLinuxSeccompPolicy records replacing the container's seccomp policy
// with a copy of p.
func (a *ContainerAdjustment) SetLinuxSeccompPolicy(p *LinuxSeccomp) {
	a.linux().SeccompPolicy = Clone(p)
}

// SetLinuxScheduler records setting the container's scheduling attributes
// (a copy of s).
func (a *ContainerAdjustment) SetLinuxScheduler(s *LinuxScheduler) {
	a.linux().Scheduler = Clone(s)
}

// SetLinuxMemoryPolicy records setting the container's NUMA memory policy.
func (a *ContainerAdjustment) SetLinuxMemoryPolicy(mode MpolMode, nodes string, flags ...MpolFlag) {
	a.linux().MemoryPolicy = &LinuxMemoryPolicy{Mode: mode, Nodes: nodes, Flags: slices.Clone(flags)}
}

// SetLinuxRDTClosID records setting the container's RDT class of service.
func (a *ContainerAdjustment) SetLinuxRDTClosID(value string) {
	a.rdt().ClosId = String(value)
}

// SetLinuxRDTSchemata records setting the container's RDT schemata.
func (a *ContainerAdjustment) SetLinuxRDTSchemata(value []string) {
	a.rdt().Schemata = RepeatedString(value)
}

// SetLinuxRDTEnableMonitoring records enabling or disabling RDT monitoring.
func (a *ContainerAdjustment) SetLinuxRDTEnableMonitoring(value bool) {
	a.rdt().EnableMonitoring = Bool(value)
}

// RemoveLinuxRDT records the removal of the container's RDT configuration
// (including RDT settings of earlier plugins). RDT fields set afterwards
// still apply.
func (a *ContainerAdjustment) RemoveLinuxRDT() {
	a.rdt().Remove = true
}

// Resources.

// SetLinuxMemoryLimit records setting the memory limit (bytes).
func (a *ContainerAdjustment) SetLinuxMemoryLimit(value int64) {
	a.resources().memory().Limit = Int64(value)
}

// SetLinuxMemoryReservation records setting the memory reservation (bytes).
func (a *ContainerAdjustment) SetLinuxMemoryReservation(value int64) {
	a.resources().memory().Reservation = Int64(value)
}

// SetLinuxMemorySwap records setting the memory+swap limit (bytes).
func (a *ContainerAdjustment) SetLinuxMemorySwap(value int64) {
	a.resources().memory().Swap = Int64(value)
}

// SetLinuxMemoryKernel records setting the kernel memory limit (bytes).
func (a *ContainerAdjustment) SetLinuxMemoryKernel(value int64) {
	a.resources().memory().Kernel = Int64(value)
}

// SetLinuxMemoryKernelTCP records setting the kernel TCP buffer memory
// limit (bytes).
func (a *ContainerAdjustment) SetLinuxMemoryKernelTCP(value int64) {
	a.resources().memory().KernelTcp = Int64(value)
}

// SetLinuxMemorySwappiness records setting the memory swappiness.
func (a *ContainerAdjustment) SetLinuxMemorySwappiness(value uint64) {
	a.resources().memory().Swappiness = UInt64(value)
}

// SetLinuxMemoryDisableOomKiller records disabling the OOM killer.
func (a *ContainerAdjustment) SetLinuxMemoryDisableOomKiller() {
	a.resources().memory().DisableOomKiller = Bool(true)
}

// SetLinuxMemoryUseHierarchy records enabling hierarchical memory
// accounting.
func (a *ContainerAdjustment) SetLinuxMemoryUseHierarchy() {
	a.resources().memory().UseHierarchy = Bool(true)
}

// SetLinuxCPUShares records setting the CPU shares (relative weight).
func (a *ContainerAdjustment) SetLinuxCPUShares(value uint64) {
	a.resources().cpu().Shares = UInt64(value)
}

// SetLinuxCPUQuota records setting the CFS quota (µs per period).
func (a *ContainerAdjustment) SetLinuxCPUQuota(value int64) {
	a.resources().cpu().Quota = Int64(value)
}

// SetLinuxCPUPeriod records setting the CFS period (µs). The value is
// signed for compatibility with upstream; it is stored unsigned.
func (a *ContainerAdjustment) SetLinuxCPUPeriod(value int64) {
	a.resources().cpu().Period = UInt64(value)
}

// SetLinuxCPURealtimeRuntime records setting the realtime runtime (µs).
func (a *ContainerAdjustment) SetLinuxCPURealtimeRuntime(value int64) {
	a.resources().cpu().RealtimeRuntime = Int64(value)
}

// SetLinuxCPURealtimePeriod records setting the realtime period (µs).
func (a *ContainerAdjustment) SetLinuxCPURealtimePeriod(value uint64) {
	a.resources().cpu().RealtimePeriod = UInt64(value)
}

// SetLinuxCPUSetCPUs records setting the cpuset CPUs (e.g. "0-3,7").
func (a *ContainerAdjustment) SetLinuxCPUSetCPUs(value string) {
	a.resources().cpu().Cpus = value
}

// SetLinuxCPUSetMems records setting the cpuset memory nodes (e.g. "0,1").
func (a *ContainerAdjustment) SetLinuxCPUSetMems(value string) {
	a.resources().cpu().Mems = value
}

// SetLinuxPidLimits records setting the maximum number of pids.
func (a *ContainerAdjustment) SetLinuxPidLimits(value int64) {
	a.resources().Pids = &LinuxPids{Limit: value}
}

// AddLinuxHugepageLimit records limiting huge pages of pageSize (e.g.
// "2MB") to value bytes.
func (a *ContainerAdjustment) AddLinuxHugepageLimit(pageSize string, value uint64) {
	a.resources().addHugepageLimit(pageSize, value)
}

// SetLinuxBlockIOClass records setting the block I/O class.
func (a *ContainerAdjustment) SetLinuxBlockIOClass(value string) {
	a.resources().BlockioClass = String(value)
}

// SetLinuxRDTClass records setting the RDT class.
func (a *ContainerAdjustment) SetLinuxRDTClass(value string) {
	a.resources().RdtClass = String(value)
}

// AddLinuxUnified records setting the cgroup v2 unified resource key.
func (a *ContainerAdjustment) AddLinuxUnified(key, value string) {
	a.resources().unified()[key] = value
}

// Sub-message allocation.

func (a *ContainerAdjustment) annotations() map[string]string {
	if a.Annotations == nil {
		a.Annotations = make(map[string]string)
	}
	return a.Annotations
}

func (a *ContainerAdjustment) linux() *LinuxContainerAdjustment {
	if a.Linux == nil {
		a.Linux = &LinuxContainerAdjustment{}
	}
	return a.Linux
}

func (a *ContainerAdjustment) resources() *LinuxResources {
	l := a.linux()
	if l.Resources == nil {
		l.Resources = &LinuxResources{}
	}
	return l.Resources
}

func (a *ContainerAdjustment) sysctl() map[string]string {
	l := a.linux()
	if l.Sysctl == nil {
		l.Sysctl = make(map[string]string)
	}
	return l.Sysctl
}

func (a *ContainerAdjustment) netDevices() map[string]*LinuxNetDevice {
	l := a.linux()
	if l.NetDevices == nil {
		l.NetDevices = make(map[string]*LinuxNetDevice)
	}
	return l.NetDevices
}

func (a *ContainerAdjustment) rdt() *LinuxRdt {
	l := a.linux()
	if l.Rdt == nil {
		l.Rdt = &LinuxRdt{}
	}
	return l.Rdt
}

func (r *LinuxResources) memory() *LinuxMemory {
	if r.Memory == nil {
		r.Memory = &LinuxMemory{}
	}
	return r.Memory
}

func (r *LinuxResources) cpu() *LinuxCPU {
	if r.Cpu == nil {
		r.Cpu = &LinuxCPU{}
	}
	return r.Cpu
}

func (r *LinuxResources) unified() map[string]string {
	if r.Unified == nil {
		r.Unified = make(map[string]string)
	}
	return r.Unified
}

func (r *LinuxResources) addHugepageLimit(pageSize string, value uint64) {
	r.HugepageLimits = append(r.HugepageLimits, &HugepageLimit{PageSize: pageSize, Limit: value})
}
