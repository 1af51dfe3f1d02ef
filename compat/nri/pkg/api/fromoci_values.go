package api

import (
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// The conversions below are those of single values and of parts
// ocispec.ToContainer does not describe (an adjustment's environment and
// memory policy). Enumerations map by name, through the value tables
// generated from the protocol's schema, as upstream's do: an unknown name
// is the zero value. nil and empty input give what upstream's give.

// FromOCIEnv converts an OCI environment ("KEY=VALUE" entries) to
// key-value pairs (nil for nil); an entry without "=" is a key with an
// empty value.
func FromOCIEnv(in []string) []*KeyValue {
	if in == nil {
		return nil
	}
	out := make([]*KeyValue, 0, len(in))
	for _, kv := range in {
		key, value, _ := strings.Cut(kv, "=")
		out = append(out, &KeyValue{Key: key, Value: value})
	}
	return out
}

// FromOCIHookSlice converts OCI hooks (nil for none).
func FromOCIHookSlice(o []rspec.Hook) []*Hook {
	if len(o) == 0 {
		return nil
	}
	return FromOCIHooks(&rspec.Hooks{CreateRuntime: o}).GetCreateRuntime()
}

// FromOCIIOPriorityClass converts an OCI I/O priority class.
func FromOCIIOPriorityClass(o rspec.IOPriorityClass) IOPrioClass {
	return IOPrioClass(IOPrioClass_value[string(o)])
}

// FromOCISchedulerPolicy converts an OCI scheduling policy.
func FromOCISchedulerPolicy(o rspec.LinuxSchedulerPolicy) LinuxSchedulerPolicy {
	return LinuxSchedulerPolicy(LinuxSchedulerPolicy_value[string(o)])
}

// FromOCILinuxSchedulerFlags converts OCI scheduler flags (nil for nil).
func FromOCILinuxSchedulerFlags(o []rspec.LinuxSchedulerFlag) []LinuxSchedulerFlag {
	return mapSlice(o, func(f rspec.LinuxSchedulerFlag) LinuxSchedulerFlag {
		return LinuxSchedulerFlag(LinuxSchedulerFlag_value[string(f)])
	})
}

// FromOCIMemoryPolicyMode converts an OCI memory policy mode.
func FromOCIMemoryPolicyMode(mode rspec.MemoryPolicyModeType) MpolMode {
	return MpolMode(MpolMode_value[string(mode)])
}

// FromOCIMemoryPolicyFlags converts OCI memory policy flags (nil for nil).
func FromOCIMemoryPolicyFlags(flags ...rspec.MemoryPolicyFlagType) []MpolFlag {
	return mapSlice(flags, func(f rspec.MemoryPolicyFlagType) MpolFlag {
		return MpolFlag(MpolFlag_value[string(f)])
	})
}

// FromOCILinuxMemoryPolicy converts an OCI memory policy (nil for nil).
func FromOCILinuxMemoryPolicy(o *rspec.LinuxMemoryPolicy) *LinuxMemoryPolicy {
	if o == nil {
		return nil
	}
	return &LinuxMemoryPolicy{
		Mode:  FromOCIMemoryPolicyMode(o.Mode),
		Nodes: o.Nodes,
		Flags: FromOCIMemoryPolicyFlags(o.Flags...),
	}
}

// FromOCILinuxNetDevice converts an OCI network device.
func FromOCILinuxNetDevice(o rspec.LinuxNetDevice) *LinuxNetDevice {
	return FromOCILinuxNetDevices(map[string]rspec.LinuxNetDevice{"": o})[""]
}

// FromOCILinuxSyscalls converts OCI seccomp syscall rules (empty, not
// nil, for none).
func FromOCILinuxSyscalls(o []rspec.LinuxSyscall) []*LinuxSyscall {
	if len(o) == 0 {
		return []*LinuxSyscall{}
	}
	return FromOCILinuxSeccomp(&rspec.LinuxSeccomp{Syscalls: o}).GetSyscalls()
}

// FromOCILinuxSeccompArgs converts OCI seccomp syscall arguments (empty,
// not nil, for none).
func FromOCILinuxSeccompArgs(o []rspec.LinuxSeccompArg) []*LinuxSeccompArg {
	if len(o) == 0 {
		return []*LinuxSeccompArg{}
	}
	return FromOCILinuxSyscalls([]rspec.LinuxSyscall{{Args: o}})[0].GetArgs()
}

// mapSlice converts each element of in (nil for nil).
func mapSlice[In, Out any](in []In, f func(In) Out) []Out {
	if in == nil {
		return nil
	}
	out := make([]Out, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
