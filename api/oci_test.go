package api_test

import (
	"os"
	"reflect"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// The ToOCI conversions are compared with upstream's on generated messages
// in interop/tooci; these are the rules a runtime relies on, spelled out.

func TestLinuxResourcesToOCI(t *testing.T) {
	limit, zero := int64(100), int64(0)
	for _, tc := range []struct {
		name string
		in   *api.LinuxResources
		want *rspec.LinuxResources
	}{
		{"nil", nil, nil},
		{"empty: CPU and memory set, empty", &api.LinuxResources{},
			&rspec.LinuxResources{CPU: &rspec.LinuxCPU{}, Memory: &rspec.LinuxMemory{}}},
		{"unlimited pids", &api.LinuxResources{Pids: &api.LinuxPids{Limit: api.UnlimitedPidsLimit}},
			&rspec.LinuxResources{CPU: &rspec.LinuxCPU{}, Memory: &rspec.LinuxMemory{}, Pids: &rspec.LinuxPids{}}},
		{"pids limit 0 is a limit", &api.LinuxResources{Pids: &api.LinuxPids{Limit: 0}},
			&rspec.LinuxResources{CPU: &rspec.LinuxCPU{}, Memory: &rspec.LinuxMemory{}, Pids: &rspec.LinuxPids{Limit: &zero}}},
		{"fields", &api.LinuxResources{
			Memory:         &api.LinuxMemory{Limit: api.Int64(limit)},
			Cpu:            &api.LinuxCPU{Cpus: "0-1", Shares: api.UInt64(2)},
			HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4}},
			Unified:        map[string]string{"memory.high": "1"},
			Devices:        []*api.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: api.Int64(1), Access: "rw"}},
			BlockioClass:   api.String("no OCI field"),
		}, &rspec.LinuxResources{
			Memory:         &rspec.LinuxMemory{Limit: &limit},
			CPU:            &rspec.LinuxCPU{Cpus: "0-1", Shares: ptr(uint64(2))},
			HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 4}},
			Unified:        map[string]string{"memory.high": "1"},
			Devices:        []rspec.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: ptr(int64(1)), Access: "rw"}},
		}},
	} {
		if got := tc.in.ToOCI(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	r := &api.LinuxResources{Unified: map[string]string{"a": "1"}}
	r.ToOCI().Unified["a"] = "changed"
	if r.Unified["a"] != "1" {
		t.Error("ToOCI's unified map is the message's, not a copy")
	}
}

func TestMountToOCIPropagation(t *testing.T) {
	m := &api.Mount{Destination: "/d", Type: "bind", Source: "/s", Options: []string{"rbind", "rshared", "ro", "rslave"}}
	prop := "unchanged"
	got := m.ToOCI(&prop)
	want := rspec.Mount{Destination: "/d", Type: "bind", Source: "/s", Options: []string{"rbind", "rshared", "ro", "rslave"}}
	if !reflect.DeepEqual(got, want) || prop != "rslave" {
		t.Errorf("got %+v and propagation %q, want %+v and the last propagation option, rslave", got, prop, want)
	}
	prop = "unchanged"
	if (&api.Mount{Options: []string{"ro"}}).ToOCI(&prop); prop != "unchanged" {
		t.Errorf("a mount without propagation option set it to %q", prop)
	}
	if got := (&api.Mount{Options: []string{}}).ToOCI(nil); got.Options != nil {
		t.Errorf("empty options converted to %#v, want nil", got.Options)
	}
}

func TestProcessSettingsToOCI(t *testing.T) {
	mode := os.FileMode(0o640)
	dev := &api.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 2, FileMode: api.FileMode(mode), Gid: api.UInt32(uint32(5))}
	if got, want := dev.ToOCI(), (rspec.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 2, FileMode: &mode, GID: ptr(uint32(5))}); !reflect.DeepEqual(got, want) {
		t.Errorf("device: got %+v, want %+v", got, want)
	}
	hook := &api.Hook{Path: "/bin/h", Args: []string{"h", "x"}, Timeout: api.Int(3)}
	if got, want := hook.ToOCI(), (rspec.Hook{Path: "/bin/h", Args: []string{"h", "x"}, Timeout: ptr(3)}); !reflect.DeepEqual(got, want) {
		t.Errorf("hook: got %+v, want %+v", got, want)
	}
	if got := (&api.KeyValue{Key: "A", Value: "b=c"}).ToOCI(); got != "A=b=c" {
		t.Errorf("env: got %q", got)
	}
	if got := (&api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_NONE, Nice: 5}).ToOCI(); got != nil {
		t.Errorf("SCHED_NONE: got %+v, want nil (the runtime's default)", got)
	}
	sch := &api.LinuxScheduler{Policy: api.LinuxSchedulerPolicy_SCHED_FIFO, Priority: 9, Flags: []api.LinuxSchedulerFlag{api.LinuxSchedulerFlag_SCHED_FLAG_RESET_ON_FORK}}
	if got, want := sch.ToOCI(), (&rspec.Scheduler{Policy: rspec.SchedFIFO, Priority: 9, Flags: []rspec.LinuxSchedulerFlag{rspec.SchedFlagResetOnFork}}); !reflect.DeepEqual(got, want) {
		t.Errorf("scheduler: got %+v, want %+v", got, want)
	}
	if got, want := (&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE, Priority: 4}).ToOCI(), (&rspec.LinuxIOPriority{Class: rspec.IOPRIO_CLASS_BE, Priority: 4}); !reflect.DeepEqual(got, want) {
		t.Errorf("I/O priority: got %+v, want %+v", got, want)
	}
	if got := api.IOPrioClass_IOPRIO_CLASS_NONE.ToOCI(); got != "" {
		t.Errorf("IOPRIO_CLASS_NONE: got %q, want empty", got)
	}
	mp := &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_INTERLEAVE, Nodes: "0-1", Flags: []api.MpolFlag{api.MpolFlag_MPOL_F_STATIC_NODES}}
	if got, want := mp.ToOCI(), (&rspec.LinuxMemoryPolicy{Mode: rspec.MpolInterleave, Nodes: "0-1", Flags: []rspec.MemoryPolicyFlagType{rspec.MpolFStaticNodes}}); !reflect.DeepEqual(got, want) {
		t.Errorf("memory policy: got %+v, want %+v", got, want)
	}
	if got := api.MpolMode(99).ToOCI(); got != "" {
		t.Errorf("undefined mode: got %q, want empty", got)
	}
	nd := map[string]*api.LinuxNetDevice{"eth1": {Name: "net0"}}
	if got, want := api.ToOCILinuxNetDevices(nd), map[string]rspec.LinuxNetDevice{"eth1": {Name: "net0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("net devices: got %+v, want %+v", got, want)
	}
	sys := []*api.LinuxSyscall{{Names: []string{"mkdir"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: api.UInt32(uint32(1)), Args: []*api.LinuxSeccompArg{{Index: 1, Value: 2, Op: "SCMP_CMP_EQ"}}}}
	want := []rspec.LinuxSyscall{{Names: []string{"mkdir"}, Action: rspec.ActErrno, ErrnoRet: ptr(uint(1)), Args: []rspec.LinuxSeccompArg{{Index: 1, Value: 2, Op: rspec.OpEqualTo}}}}
	if got := api.ToOCILinuxSyscalls(sys); !reflect.DeepEqual(got, want) {
		t.Errorf("syscalls: got %+v, want %+v", got, want)
	}
	if got := api.ToOCILinuxSyscalls(nil); got == nil || len(got) != 0 {
		t.Errorf("no syscalls: got %#v, want an empty slice, as upstream's", got)
	}
}

func ptr[T any](v T) *T { return &v }
