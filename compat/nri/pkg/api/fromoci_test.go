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
