package api

import (
	"maps"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// The ToOCI methods below convert protocol messages into the OCI runtime
// spec's types, field for field, as containerd/nri's api package does (a
// runtime written for upstream calls them; CRI-O converts a plugin's
// container update with LinuxResources.ToOCI). They are conversions, not
// adjustments: for merging a plugin's answer into a spec, see the ocispec
// package. Unlike upstream's, none of them panics on a nil element of a
// repeated field (protobuf decoding never produces one): a nil element
// converts to the zero value.

// UnlimitedPidsLimit is the pids limit that means no limit: ToOCI turns
// it (and any negative limit) into OCI's absent limit.
const UnlimitedPidsLimit = -1

// ToOCI returns the resources as an OCI LinuxResources (nil for nil). As
// upstream's does, it always sets CPU and Memory, empty when the message
// has none, and leaves out the block I/O and RDT classes, which have no
// OCI field.
func (r *LinuxResources) ToOCI() *rspec.LinuxResources {
	if r == nil {
		return nil
	}
	o := &rspec.LinuxResources{
		Memory: &rspec.LinuxMemory{},
		CPU:    &rspec.LinuxCPU{},
	}
	if m := r.GetMemory(); m != nil {
		o.Memory = &rspec.LinuxMemory{
			Limit:            m.GetLimit().Get(),
			Reservation:      m.GetReservation().Get(),
			Swap:             m.GetSwap().Get(),
			Kernel:           m.GetKernel().Get(), //lint:ignore SA1019 kernel memory is still part of the protocol
			KernelTCP:        m.GetKernelTcp().Get(),
			Swappiness:       m.GetSwappiness().Get(),
			DisableOOMKiller: m.GetDisableOomKiller().Get(),
			UseHierarchy:     m.GetUseHierarchy().Get(),
		}
	}
	if c := r.GetCpu(); c != nil {
		o.CPU = &rspec.LinuxCPU{
			Shares:          c.GetShares().Get(),
			Quota:           c.GetQuota().Get(),
			Period:          c.GetPeriod().Get(),
			RealtimeRuntime: c.GetRealtimeRuntime().Get(),
			RealtimePeriod:  c.GetRealtimePeriod().Get(),
			Cpus:            c.GetCpus(),
			Mems:            c.GetMems(),
		}
	}
	for _, h := range r.GetHugepageLimits() {
		o.HugepageLimits = append(o.HugepageLimits, rspec.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	if len(r.GetUnified()) > 0 {
		o.Unified = maps.Clone(r.GetUnified())
	}
	for _, d := range r.GetDevices() {
		o.Devices = append(o.Devices, rspec.LinuxDeviceCgroup{
			Allow:  d.GetAllow(),
			Type:   d.GetType(),
			Major:  d.GetMajor().Get(),
			Minor:  d.GetMinor().Get(),
			Access: d.GetAccess(),
		})
	}
	if p := r.GetPids(); p != nil {
		o.Pids = &rspec.LinuxPids{}
		if limit := p.GetLimit(); limit > UnlimitedPidsLimit {
			o.Pids.Limit = &limit
		}
	}
	return o
}

// ToOCI returns the device as an OCI LinuxDevice (the zero value for nil).
func (d *LinuxDevice) ToOCI() rspec.LinuxDevice {
	if d == nil {
		return rspec.LinuxDevice{}
	}
	return rspec.LinuxDevice{
		Path:     d.GetPath(),
		Type:     d.GetType(),
		Major:    d.GetMajor(),
		Minor:    d.GetMinor(),
		FileMode: d.GetFileMode().Get(),
		UID:      d.GetUid().Get(),
		GID:      d.GetGid().Get(),
	}
}

// ToOCI returns the hook as an OCI Hook, with copies of its arguments and
// environment (the zero value for nil).
func (h *Hook) ToOCI() rspec.Hook {
	return rspec.Hook{
		Path:    h.GetPath(),
		Args:    DupStringSlice(h.GetArgs()),
		Env:     DupStringSlice(h.GetEnv()),
		Timeout: h.GetTimeout().Get(),
	}
}

// ToOCI returns the mount as an OCI Mount (the zero value for nil). If
// propagation is not nil, the last propagation option among the mount's
// options (rprivate, rshared or rslave) is stored in it; it is left alone
// when there is none.
func (m *Mount) ToOCI(propagation *string) rspec.Mount {
	o := rspec.Mount{
		Destination: m.GetDestination(),
		Type:        m.GetType(),
		Source:      m.GetSource(),
	}
	for _, opt := range m.GetOptions() {
		o.Options = append(o.Options, opt)
		switch opt {
		case "rprivate", "rshared", "rslave":
			if propagation != nil {
				*propagation = opt
			}
		}
	}
	return o
}

// ToOCI returns the environment variable as an OCI env entry, KEY=VALUE.
func (e *KeyValue) ToOCI() string {
	return e.GetKey() + "=" + e.GetValue()
}

// ToOCI returns the I/O priority as an OCI LinuxIOPriority (nil for nil).
func (p *LinuxIOPriority) ToOCI() *rspec.LinuxIOPriority {
	if p == nil {
		return nil
	}
	return &rspec.LinuxIOPriority{Class: p.GetClass().ToOCI(), Priority: int(p.GetPriority())}
}

// ToOCI returns the class's OCI name: the enum value's name, empty for
// IOPRIO_CLASS_NONE and for values the schema does not define.
func (c IOPrioClass) ToOCI() rspec.IOPriorityClass {
	if c == IOPrioClass_IOPRIO_CLASS_NONE {
		return ""
	}
	return rspec.IOPriorityClass(IOPrioClass_name[int32(c)])
}

// ToOCI returns the scheduler setting as an OCI Scheduler: nil for nil
// and for policy SCHED_NONE, which means the runtime's default.
func (s *LinuxScheduler) ToOCI() *rspec.Scheduler {
	if s == nil || s.GetPolicy() == LinuxSchedulerPolicy_SCHED_NONE {
		return nil
	}
	return &rspec.Scheduler{
		Policy:   s.GetPolicy().ToOCI(),
		Nice:     s.GetNice(),
		Priority: s.GetPriority(),
		Flags:    ToOCILinuxSchedulerFlags(s.GetFlags()),
		Runtime:  s.GetRuntime(),
		Deadline: s.GetDeadline(),
		Period:   s.GetPeriod(),
	}
}

// ToOCI returns the policy's OCI name: the enum value's name, empty for
// SCHED_NONE and for values the schema does not define.
func (p LinuxSchedulerPolicy) ToOCI() rspec.LinuxSchedulerPolicy {
	if p == LinuxSchedulerPolicy_SCHED_NONE {
		return ""
	}
	return rspec.LinuxSchedulerPolicy(LinuxSchedulerPolicy_name[int32(p)])
}

// ToOCILinuxSchedulerFlags returns the flags' OCI names (nil for nil): each
// enum value's name, empty for values the schema does not define.
func ToOCILinuxSchedulerFlags(flags []LinuxSchedulerFlag) []rspec.LinuxSchedulerFlag {
	return convertEach(flags, func(f LinuxSchedulerFlag) rspec.LinuxSchedulerFlag {
		return rspec.LinuxSchedulerFlag(LinuxSchedulerFlag_name[int32(f)])
	})
}

// ToOCI returns the memory policy as an OCI LinuxMemoryPolicy (nil for
// nil).
func (p *LinuxMemoryPolicy) ToOCI() *rspec.LinuxMemoryPolicy {
	if p == nil {
		return nil
	}
	return &rspec.LinuxMemoryPolicy{
		Mode:  p.GetMode().ToOCI(),
		Nodes: p.GetNodes(),
		Flags: ToOCIMemoryPolicyFlags(p.GetFlags()...),
	}
}

// ToOCI returns the mode's OCI name: the enum value's name (MPOL_DEFAULT
// for the zero value), empty for values the schema does not define.
func (m MpolMode) ToOCI() rspec.MemoryPolicyModeType {
	return rspec.MemoryPolicyModeType(MpolMode_name[int32(m)])
}

// ToOCIMemoryPolicyFlags returns the flags' OCI names (nil for nil): each
// enum value's name, empty for values the schema does not define.
func ToOCIMemoryPolicyFlags(flags ...MpolFlag) []rspec.MemoryPolicyFlagType {
	return convertEach(flags, func(f MpolFlag) rspec.MemoryPolicyFlagType {
		return rspec.MemoryPolicyFlagType(MpolFlag_name[int32(f)])
	})
}

// ToOCI returns the network device as an OCI LinuxNetDevice (the zero
// value for nil).
func (d *LinuxNetDevice) ToOCI() rspec.LinuxNetDevice {
	return rspec.LinuxNetDevice{Name: d.GetName()}
}

// ToOCILinuxNetDevices returns the network devices, keyed by their host
// names, as OCI LinuxNetDevices (nil for nil).
func ToOCILinuxNetDevices(devices map[string]*LinuxNetDevice) map[string]rspec.LinuxNetDevice {
	if devices == nil {
		return nil
	}
	o := make(map[string]rspec.LinuxNetDevice, len(devices))
	for host, d := range devices {
		o[host] = d.ToOCI()
	}
	return o
}

// ToOCILinuxSyscalls returns the seccomp syscall rules as OCI
// LinuxSyscalls. As upstream's, it returns an empty slice, not nil, for
// no rules.
func ToOCILinuxSyscalls(rules []*LinuxSyscall) []rspec.LinuxSyscall {
	o := make([]rspec.LinuxSyscall, len(rules))
	for i, r := range rules {
		o[i] = rspec.LinuxSyscall{
			Names:  DupStringSlice(r.GetNames()),
			Action: rspec.LinuxSeccompAction(r.GetAction()),
			Args:   ToOCILinuxSeccompArgs(r.GetArgs()),
		}
		if errno := r.GetErrnoRet(); errno != nil {
			v := uint(errno.GetValue())
			o[i].ErrnoRet = &v
		}
	}
	return o
}

// ToOCILinuxSeccompArgs returns the seccomp argument conditions as OCI
// LinuxSeccompArgs. As upstream's, it returns an empty slice, not nil, for
// no conditions.
func ToOCILinuxSeccompArgs(args []*LinuxSeccompArg) []rspec.LinuxSeccompArg {
	o := make([]rspec.LinuxSeccompArg, len(args))
	for i, a := range args {
		o[i] = rspec.LinuxSeccompArg{
			Index:    uint(a.GetIndex()),
			Value:    a.GetValue(),
			ValueTwo: a.GetValueTwo(),
			Op:       rspec.LinuxSeccompOperator(a.GetOp()),
		}
	}
	return o
}

// convertEach converts every element of in (nil for nil, empty for empty).
func convertEach[T, U any](in []T, conv func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}
