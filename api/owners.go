package api

// Field ownership, as the runtime reports it to validating plugins in
// ValidateContainerAdjustmentRequest.Owners.
//
// OwningPlugins maps a container ID to the FieldOwners of that container.
// FieldOwners.Simple maps a Field (as int32) to the plugin that set it;
// FieldOwners.Compound maps a Field to the owners of its entries, keyed
// like the entries (environment variable name, mount destination, ...).
// An owner is a full plugin name ("10-foo"). An owner marked for removal
// ("-10-foo") is a plugin that removed the field or entry, which then
// may set it again without conflict. OCI hooks, which accumulate, are
// owned by a comma-separated list of plugins ("10-foo,20-bar").
//
// The accessors below are nil-safe: they report false for a nil receiver
// or an unknown container.

// NewOwningPlugins returns an empty ownership record.
func NewOwningPlugins() *OwningPlugins {
	return &OwningPlugins{Owners: make(map[string]*FieldOwners)}
}

// NewFieldOwners returns an empty ownership record for one container.
func NewFieldOwners() *FieldOwners {
	return &FieldOwners{
		Simple:   make(map[int32]string),
		Compound: make(map[int32]*CompoundFieldOwners),
	}
}

// Key returns the field as the key used in FieldOwners' maps.
func (f Field) Key() int32 {
	return int32(f)
}

// SimpleOwner returns the plugin that set the simple field f of container id.
func (o *OwningPlugins) SimpleOwner(id string, f Field) (string, bool) {
	return o.GetOwners()[id].SimpleOwner(f)
}

// CompoundOwner returns the plugin that set the entry key of the compound
// field f of container id.
func (o *OwningPlugins) CompoundOwner(id string, f Field, key string) (string, bool) {
	return o.GetOwners()[id].CompoundOwner(f, key)
}

// CompoundOwners returns the owners of all entries of the compound field f
// of container id, keyed by entry. The map is the record itself; do not
// modify it.
func (o *OwningPlugins) CompoundOwners(id string, f Field) (map[string]string, bool) {
	return o.GetOwners()[id].CompoundOwners(f)
}

// SimpleOwner returns the plugin that set the simple field f.
func (f *FieldOwners) SimpleOwner(field Field) (string, bool) {
	owner, ok := f.GetSimple()[field.Key()]
	return owner, ok
}

// CompoundOwner returns the plugin that set the entry key of the compound
// field f.
func (f *FieldOwners) CompoundOwner(field Field, key string) (string, bool) {
	owner, ok := f.GetCompound()[field.Key()].GetOwners()[key]
	return owner, ok
}

// CompoundOwners returns the owners of all entries of the compound field f,
// keyed by entry.
func (f *FieldOwners) CompoundOwners(field Field) (map[string]string, bool) {
	c, ok := f.GetCompound()[field.Key()]
	if !ok {
		return nil, false
	}
	return c.GetOwners(), true
}

// NamespaceOwners returns the owners of the namespaces of container id,
// keyed by namespace type.
func (o *OwningPlugins) NamespaceOwners(id string) (map[string]string, bool) {
	return o.CompoundOwners(id, Field_Namespace)
}

// Accessors named after upstream's, for validators ported from it.

// ArgsOwner returns the plugin that set the command line of container id.
func (o *OwningPlugins) ArgsOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_Args)
}

// HooksOwner returns the plugin that set the OCI hooks (a comma-separated list: hooks of several plugins accumulate) of container id.
func (o *OwningPlugins) HooksOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_OciHooks)
}

// MemLimitOwner returns the plugin that set the memory limit of container id.
func (o *OwningPlugins) MemLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemLimit)
}

// MemReservationOwner returns the plugin that set the memory reservation of container id.
func (o *OwningPlugins) MemReservationOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemReservation)
}

// MemSwapLimitOwner returns the plugin that set the memory+swap limit of container id.
func (o *OwningPlugins) MemSwapLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemSwapLimit)
}

// MemKernelLimitOwner returns the plugin that set the kernel memory limit of container id.
func (o *OwningPlugins) MemKernelLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemKernelLimit)
}

// MemTCPLimitOwner returns the plugin that set the kernel TCP memory limit of container id.
func (o *OwningPlugins) MemTCPLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemTCPLimit)
}

// MemSwappinessOwner returns the plugin that set the memory swappiness of container id.
func (o *OwningPlugins) MemSwappinessOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemSwappiness)
}

// MemDisableOomKillerOwner returns the plugin that set the OOM killer setting of container id.
func (o *OwningPlugins) MemDisableOomKillerOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemDisableOomKiller)
}

// MemUseHierarchyOwner returns the plugin that set hierarchical memory accounting of container id.
func (o *OwningPlugins) MemUseHierarchyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemUseHierarchy)
}

// CPUSharesOwner returns the plugin that set the CPU shares of container id.
func (o *OwningPlugins) CPUSharesOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUShares)
}

// CPUQuotaOwner returns the plugin that set the CPU quota of container id.
func (o *OwningPlugins) CPUQuotaOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUQuota)
}

// CPUPeriodOwner returns the plugin that set the CPU period of container id.
func (o *OwningPlugins) CPUPeriodOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUPeriod)
}

// CPURealtimeRuntimeOwner returns the plugin that set the realtime CPU runtime of container id.
func (o *OwningPlugins) CPURealtimeRuntimeOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPURealtimeRuntime)
}

// CPURealtimePeriodOwner returns the plugin that set the realtime CPU period of container id.
func (o *OwningPlugins) CPURealtimePeriodOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPURealtimePeriod)
}

// CPUSetCPUsOwner returns the plugin that set the cpuset CPUs of container id.
func (o *OwningPlugins) CPUSetCPUsOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUSetCPUs)
}

// CPUSetMemsOwner returns the plugin that set the cpuset memory nodes of container id.
func (o *OwningPlugins) CPUSetMemsOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CPUSetMems)
}

// PidsLimitOwner returns the plugin that set the pids limit of container id.
func (o *OwningPlugins) PidsLimitOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_PidsLimit)
}

// BlockioClassOwner returns the plugin that set the block I/O class of container id.
func (o *OwningPlugins) BlockioClassOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_BlockioClass)
}

// RdtClassOwner returns the plugin that set the RDT class of container id.
func (o *OwningPlugins) RdtClassOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtClass)
}

// CgroupsPathOwner returns the plugin that set the cgroups path of container id.
func (o *OwningPlugins) CgroupsPathOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_CgroupsPath)
}

// OomScoreAdjOwner returns the plugin that set the OOM score adjustment of container id.
func (o *OwningPlugins) OomScoreAdjOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_OomScoreAdj)
}

// IOPriorityOwner returns the plugin that set the I/O priority of container id.
func (o *OwningPlugins) IOPriorityOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_IoPriority)
}

// SeccompPolicyOwner returns the plugin that set the seccomp policy of container id.
func (o *OwningPlugins) SeccompPolicyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_SeccompPolicy)
}

// LinuxSchedulerOwner returns the plugin that set the scheduling attributes of container id.
func (o *OwningPlugins) LinuxSchedulerOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_LinuxSched)
}

// RdtClosIDOwner returns the plugin that set the RDT class of service of container id.
func (o *OwningPlugins) RdtClosIDOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtClosID)
}

// RdtSchemataOwner returns the plugin that set the RDT schemata of container id.
func (o *OwningPlugins) RdtSchemataOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtSchemata)
}

// RdtEnableMonitoringOwner returns the plugin that set RDT monitoring of container id.
func (o *OwningPlugins) RdtEnableMonitoringOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_RdtEnableMonitoring)
}

// MemoryPolicyOwner returns the plugin that set the memory policy of container id.
func (o *OwningPlugins) MemoryPolicyOwner(id string) (string, bool) {
	return o.SimpleOwner(id, Field_MemoryPolicy)
}

// AnnotationOwner returns the plugin that set the annotation key of container id.
func (o *OwningPlugins) AnnotationOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_Annotations, key)
}

// MountOwner returns the plugin that set the mount at destination of container id.
func (o *OwningPlugins) MountOwner(id, destination string) (string, bool) {
	return o.CompoundOwner(id, Field_Mounts, destination)
}

// DeviceOwner returns the plugin that set the device at path of container id.
func (o *OwningPlugins) DeviceOwner(id, path string) (string, bool) {
	return o.CompoundOwner(id, Field_Devices, path)
}

// CdiDeviceOwner returns the plugin that set the CDI device name of container id.
func (o *OwningPlugins) CdiDeviceOwner(id, name string) (string, bool) {
	return o.CompoundOwner(id, Field_CdiDevices, name)
}

// EnvOwner returns the plugin that set the environment variable name of container id.
func (o *OwningPlugins) EnvOwner(id, name string) (string, bool) {
	return o.CompoundOwner(id, Field_Env, name)
}

// HugepageLimitOwner returns the plugin that set the hugepage limit for page size of container id.
func (o *OwningPlugins) HugepageLimitOwner(id, size string) (string, bool) {
	return o.CompoundOwner(id, Field_HugepageLimits, size)
}

// CgroupsUnifiedOwner returns the plugin that set the unified cgroup resource key of container id.
func (o *OwningPlugins) CgroupsUnifiedOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_CgroupsUnified, key)
}

// RlimitOwner returns the plugin that set the rlimit typ of container id.
func (o *OwningPlugins) RlimitOwner(id, typ string) (string, bool) {
	return o.CompoundOwner(id, Field_Rlimits, typ)
}

// NamespaceOwner returns the plugin that set the namespace of type typ of container id.
func (o *OwningPlugins) NamespaceOwner(id, typ string) (string, bool) {
	return o.CompoundOwner(id, Field_Namespace, typ)
}

// SysctlOwner returns the plugin that set the sysctl key of container id.
func (o *OwningPlugins) SysctlOwner(id, key string) (string, bool) {
	return o.CompoundOwner(id, Field_Sysctl, key)
}

// LinuxNetDeviceOwner returns the plugin that set the network device moved from host interface hostIf into container id.
func (o *OwningPlugins) LinuxNetDeviceOwner(id, hostIf string) (string, bool) {
	return o.CompoundOwner(id, Field_LinuxNetDevices, hostIf)
}
