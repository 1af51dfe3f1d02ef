package api

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// TestFromOCI: each conversion carries its part of the spec, and nil or
// empty input gives nil.
func TestFromOCI(t *testing.T) {
	limit := int64(1 << 20)
	if got := FromOCIMounts([]rspec.Mount{{Destination: "/data", Source: "/host", Type: "bind", Options: []string{"ro"}}}); len(got) != 1 || got[0].Destination != "/data" || got[0].Options[0] != "ro" {
		t.Errorf("FromOCIMounts: %v", got)
	}
	if got := FromOCIHooks(&rspec.Hooks{CreateRuntime: []rspec.Hook{{Path: "/bin/hook"}}}); len(got.GetCreateRuntime()) != 1 || got.CreateRuntime[0].Path != "/bin/hook" {
		t.Errorf("FromOCIHooks: %v", got)
	}
	if got := FromOCILinuxNamespaces([]rspec.LinuxNamespace{{Type: rspec.NetworkNamespace, Path: "/proc/1/ns/net"}}); len(got) != 1 || got[0].Type != "network" || got[0].Path != "/proc/1/ns/net" {
		t.Errorf("FromOCILinuxNamespaces: %v", got)
	}
	major := int64(10)
	if got := FromOCILinuxDevices([]rspec.LinuxDevice{{Path: "/dev/x", Type: "c", Major: major, Minor: 1}}); len(got) != 1 || got[0].Path != "/dev/x" || got[0].Major != major {
		t.Errorf("FromOCILinuxDevices: %v", got)
	}
	if got := FromOCILinuxResources(&rspec.LinuxResources{Memory: &rspec.LinuxMemory{Limit: &limit}}, nil); got.GetMemory().GetLimit().GetValue() != limit {
		t.Errorf("FromOCILinuxResources: %v", got)
	}
	if got := FromOCILinuxNetDevices(map[string]rspec.LinuxNetDevice{"eth1": {Name: "net1"}}); got["eth1"].GetName() != "net1" {
		t.Errorf("FromOCILinuxNetDevices: %v", got)
	}
	if got := FromOCILinuxSeccomp(&rspec.LinuxSeccomp{DefaultAction: rspec.ActErrno}); got.GetDefaultAction() != string(rspec.ActErrno) {
		t.Errorf("FromOCILinuxSeccomp: %v", got)
	}
	if got := FromOCILinuxIOPriority(&rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_BE, Priority: 4}); got.GetPriority() != 4 {
		t.Errorf("FromOCILinuxIOPriority: %v", got)
	}
	if got := FromOCILinuxScheduler(&rspec.Scheduler{Policy: rspec.SchedFIFO, Priority: 5}); got.GetPriority() != 5 {
		t.Errorf("FromOCILinuxScheduler: %v", got)
	}
	if FromOCIMounts(nil) != nil || FromOCIHooks(nil) != nil || FromOCILinuxResources(nil, nil) != nil ||
		FromOCILinuxSeccomp(nil) != nil || FromOCILinuxIOPriority(nil) != nil || FromOCILinuxScheduler(nil) != nil {
		t.Error("nil input gave a non-nil result")
	}
}

// TestFromOCIValues: the conversions of single values and small parts,
// with upstream's results for nil and empty input.
func TestFromOCIValues(t *testing.T) {
	if got := FromOCIEnv([]string{"A=1", "B", "C=x=y"}); len(got) != 3 || got[0].Key != "A" || got[0].Value != "1" ||
		got[1].Key != "B" || got[1].Value != "" || got[2].Key != "C" || got[2].Value != "x=y" {
		t.Errorf("FromOCIEnv: %v", got)
	}
	if got := FromOCIEnv([]string{}); got == nil || len(got) != 0 {
		t.Errorf("FromOCIEnv(empty) = %#v, want empty", got)
	}
	if got := FromOCIHookSlice([]rspec.Hook{{Path: "/bin/h", Args: []string{"h", "x"}}}); len(got) != 1 || got[0].Path != "/bin/h" || len(got[0].Args) != 2 {
		t.Errorf("FromOCIHookSlice: %v", got)
	}
	if got := FromOCIIOPriorityClass(rspec.IOPRIO_CLASS_IDLE); got != IOPrioClass_IOPRIO_CLASS_IDLE {
		t.Errorf("FromOCIIOPriorityClass: %v", got)
	}
	if got := FromOCISchedulerPolicy(rspec.SchedFIFO); got != LinuxSchedulerPolicy_SCHED_FIFO {
		t.Errorf("FromOCISchedulerPolicy: %v", got)
	}
	if got := FromOCILinuxSchedulerFlags([]rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork}); len(got) != 1 || got[0] != LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK {
		t.Errorf("FromOCILinuxSchedulerFlags: %v", got)
	}
	mp := FromOCILinuxMemoryPolicy(&rspec.LinuxMemoryPolicy{Mode: rspec.MpolInterleave, Nodes: "0-1", Flags: []rspec.MemoryPolicyFlagType{rspec.MpolFStaticNodes}})
	if mp.GetMode() != MpolMode_MPOL_INTERLEAVE || mp.GetNodes() != "0-1" || len(mp.GetFlags()) != 1 || mp.Flags[0] != MpolFlag_MPOL_F_STATIC_NODES {
		t.Errorf("FromOCILinuxMemoryPolicy: %v", mp)
	}
	if got := FromOCILinuxNetDevice(rspec.LinuxNetDevice{Name: "net1"}); got.GetName() != "net1" {
		t.Errorf("FromOCILinuxNetDevice: %v", got)
	}
	errno := uint(1)
	sc := FromOCILinuxSyscalls([]rspec.LinuxSyscall{{Names: []string{"mkdir"}, Action: rspec.ActErrno, ErrnoRet: &errno,
		Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 2, Op: rspec.OpEqualTo}}}})
	if len(sc) != 1 || sc[0].Names[0] != "mkdir" || sc[0].GetErrnoRet().GetValue() != 1 || len(sc[0].Args) != 1 || sc[0].Args[0].Index != 1 {
		t.Errorf("FromOCILinuxSyscalls: %v", sc)
	}
	if got := FromOCILinuxSeccompArgs([]rspec.LinuxSeccompArg{{Index: 2, Value: 3, ValueTwo: 4, Op: rspec.OpMaskedEqual}}); len(got) != 1 || got[0].Index != 2 || got[0].ValueTwo != 4 || got[0].Op != string(rspec.OpMaskedEqual) {
		t.Errorf("FromOCILinuxSeccompArgs: %v", got)
	}
	if FromOCIEnv(nil) != nil || FromOCIHookSlice(nil) != nil || FromOCILinuxSchedulerFlags(nil) != nil ||
		FromOCIMemoryPolicyFlags() != nil || FromOCILinuxMemoryPolicy(nil) != nil {
		t.Error("nil input gave a non-nil result")
	}
	if FromOCILinuxSyscalls(nil) == nil || FromOCILinuxSeccompArgs(nil) == nil {
		t.Error("FromOCILinuxSyscalls or FromOCILinuxSeccompArgs gave nil, upstream's give an empty slice")
	}
}
