//lint:file-ignore SA1019 the protocol still carries prestart hooks and kernel memory limits

package ocispec

import (
	"errors"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

func TestApplyMemory(t *testing.T) {
	i64 := func(v int64) *api.OptionalInt64 { return &api.OptionalInt64{Value: v} }
	runApplyCases(t, []applyCase{
		{"limit also limits swap", nil, resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: i64(1 << 30)}}),
			nil, withResources(rspec.LinuxResources{Memory: &rspec.LinuxMemory{Limit: ptr(int64(1 << 30)), Swap: ptr(int64(1 << 30))}})},
		{"explicit swap wins", nil, resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: i64(100), Swap: i64(-1)}}),
			nil, withResources(rspec.LinuxResources{Memory: &rspec.LinuxMemory{Limit: ptr(int64(100)), Swap: ptr(int64(-1))}})},
		{"all fields, others kept", withResources(rspec.LinuxResources{Memory: &rspec.LinuxMemory{CheckBeforeUpdate: ptr(true), Swap: ptr(int64(5))}}),
			resAdj(&api.LinuxResources{Memory: &api.LinuxMemory{
				Reservation: i64(10), Kernel: i64(20), KernelTcp: i64(30), Swappiness: &api.OptionalUInt64{Value: 60},
				DisableOomKiller: &api.OptionalBool{Value: true}, UseHierarchy: &api.OptionalBool{},
			}}), nil, withResources(rspec.LinuxResources{Memory: &rspec.LinuxMemory{
				CheckBeforeUpdate: ptr(true), Swap: ptr(int64(5)), Reservation: ptr(int64(10)), Kernel: ptr(int64(20)),
				KernelTCP: ptr(int64(30)), Swappiness: ptr(uint64(60)), DisableOOMKiller: ptr(true), UseHierarchy: ptr(false),
			}})},
	})
}

func TestApplyCPU(t *testing.T) {
	base := withResources(rspec.LinuxResources{CPU: &rspec.LinuxCPU{Shares: ptr(uint64(2)), Cpus: "0-7", Mems: "0"}})
	runApplyCases(t, []applyCase{
		{"all fields", base, resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{
			Shares: &api.OptionalUInt64{Value: 1024}, Quota: &api.OptionalInt64{Value: 50000}, Period: &api.OptionalUInt64{Value: 100000},
			RealtimeRuntime: &api.OptionalInt64{Value: 950}, RealtimePeriod: &api.OptionalUInt64{Value: 1000}, Cpus: "2-3", Mems: "1",
		}}), nil, withResources(rspec.LinuxResources{CPU: &rspec.LinuxCPU{
			Shares: ptr(uint64(1024)), Quota: ptr(int64(50000)), Period: ptr(uint64(100000)),
			RealtimeRuntime: ptr(int64(950)), RealtimePeriod: ptr(uint64(1000)), Cpus: "2-3", Mems: "1",
		}})},
		{"unset fields kept", base, resAdj(&api.LinuxResources{Cpu: &api.LinuxCPU{Quota: &api.OptionalInt64{Value: -1}}}),
			nil, withResources(rspec.LinuxResources{CPU: &rspec.LinuxCPU{Shares: ptr(uint64(2)), Quota: ptr(int64(-1)), Cpus: "0-7", Mems: "0"}})},
	})
}

func TestApplyOtherResources(t *testing.T) {
	base := withResources(rspec.LinuxResources{
		HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 1}},
		Unified:        map[string]string{"memory.high": "1G"},
		Pids:           &rspec.LinuxPids{Limit: ptr(int64(100))},
		Devices:        []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	})
	runApplyCases(t, []applyCase{
		{"hugepages replace and append", base, resAdj(&api.LinuxResources{HugepageLimits: []*api.HugepageLimit{
			{PageSize: "1GB", Limit: 4 << 30}, {PageSize: "2MB", Limit: 2 << 20},
		}}), nil, withResources(rspec.LinuxResources{
			HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 2 << 20}, {Pagesize: "1GB", Limit: 4 << 30}},
			Unified:        base.Linux.Resources.Unified, Pids: base.Linux.Resources.Pids, Devices: base.Linux.Resources.Devices,
		})},
		{"unified merged", base, resAdj(&api.LinuxResources{Unified: map[string]string{"memory.high": "2G", "cpu.weight": "10"}}),
			nil, withResources(rspec.LinuxResources{
				HugepageLimits: base.Linux.Resources.HugepageLimits, Unified: map[string]string{"memory.high": "2G", "cpu.weight": "10"},
				Pids: base.Linux.Resources.Pids, Devices: base.Linux.Resources.Devices,
			})},
		{"pids limit", nil, resAdj(&api.LinuxResources{Pids: &api.LinuxPids{Limit: 42}}),
			nil, withResources(rspec.LinuxResources{Pids: &rspec.LinuxPids{Limit: ptr(int64(42))}})},
		{"pids unlimited clears", base, resAdj(&api.LinuxResources{Pids: &api.LinuxPids{Limit: -1}}),
			nil, withResources(rspec.LinuxResources{
				HugepageLimits: base.Linux.Resources.HugepageLimits, Unified: base.Linux.Resources.Unified,
				Pids: &rspec.LinuxPids{}, Devices: base.Linux.Resources.Devices,
			})},
		{"device rules appended", base, resAdj(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{
			{Allow: true, Type: "c", Major: &api.OptionalInt64{Value: 10}, Minor: &api.OptionalInt64{Value: 200}, Access: "rwm"},
			{Allow: true, Type: "a", Access: "r"},
		}}), nil, withResources(rspec.LinuxResources{
			HugepageLimits: base.Linux.Resources.HugepageLimits, Unified: base.Linux.Resources.Unified, Pids: base.Linux.Resources.Pids,
			Devices: []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"},
				{Allow: true, Type: "c", Major: ptr(int64(10)), Minor: ptr(int64(200)), Access: "rwm"}, {Allow: true, Type: "a", Access: "r"}},
		})},
	})
}

func TestApplyClasses(t *testing.T) {
	gold := &rspec.LinuxBlockIO{Weight: ptr(uint16(800))}
	blockIO := WithBlockIOClassResolver(func(class string) (*rspec.LinuxBlockIO, error) {
		if class != "gold" {
			return nil, errors.New("no such class")
		}
		return gold, nil
	})
	rdt := WithRDTClassResolver(func(class string) (*rspec.LinuxIntelRdt, error) {
		return &rspec.LinuxIntelRdt{ClosID: class, Schemata: []string{"L3:0=f"}}, nil
	})
	str := func(v string) *api.OptionalString { return &api.OptionalString{Value: v} }
	base := &rspec.Spec{Linux: &rspec.Linux{
		Resources: &rspec.LinuxResources{BlockIO: &rspec.LinuxBlockIO{Weight: ptr(uint16(10))}},
		IntelRdt:  &rspec.LinuxIntelRdt{ClosID: "old"},
	}}
	runApplyCases(t, []applyCase{
		{"resolved", nil, resAdj(&api.LinuxResources{BlockioClass: str("gold"), RdtClass: str("fast")}), []Option{blockIO, rdt},
			&rspec.Spec{Linux: &rspec.Linux{Resources: &rspec.LinuxResources{BlockIO: gold}, IntelRdt: &rspec.LinuxIntelRdt{ClosID: "fast", Schemata: []string{"L3:0=f"}}}}},
		{"empty class clears", base, resAdj(&api.LinuxResources{BlockioClass: str(""), RdtClass: str("")}), []Option{blockIO},
			&rspec.Spec{Linux: &rspec.Linux{Resources: &rspec.LinuxResources{}}}},
		{"no resolver ignores", base, resAdj(&api.LinuxResources{BlockioClass: str("gold"), RdtClass: str("fast")}), nil, base},
	})
}

func TestApplyRdt(t *testing.T) {
	base := withLinux(rspec.Linux{IntelRdt: &rspec.LinuxIntelRdt{ClosID: "a", Schemata: []string{"L3:0=1"}, L3CacheSchema: "L3:0=1"}})
	runApplyCases(t, []applyCase{
		{"set fields keeps others", base, linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
			ClosId: &api.OptionalString{Value: "b"}, EnableMonitoring: &api.OptionalBool{Value: true},
		}}), nil, withLinux(rspec.Linux{IntelRdt: &rspec.LinuxIntelRdt{ClosID: "b", Schemata: []string{"L3:0=1"}, L3CacheSchema: "L3:0=1", EnableMonitoring: true}})},
		{"remove", base, linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}}), nil, withLinux(rspec.Linux{})},
		{"remove then set", base, linuxAdj(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{
			Remove: true, Schemata: &api.OptionalRepeatedString{Value: []string{"MB:0=50"}},
		}}), nil, withLinux(rspec.Linux{IntelRdt: &rspec.LinuxIntelRdt{Schemata: []string{"MB:0=50"}}})},
		{"after class", nil, &api.ContainerAdjustment{Linux: &api.LinuxContainerAdjustment{
			Resources: &api.LinuxResources{RdtClass: &api.OptionalString{Value: "cls"}},
			Rdt:       &api.LinuxRdt{EnableMonitoring: &api.OptionalBool{Value: true}},
		}}, []Option{WithRDTClassResolver(func(c string) (*rspec.LinuxIntelRdt, error) { return &rspec.LinuxIntelRdt{ClosID: c}, nil })},
			&rspec.Spec{Linux: &rspec.Linux{Resources: &rspec.LinuxResources{}, IntelRdt: &rspec.LinuxIntelRdt{ClosID: "cls", EnableMonitoring: true}}}},
	})
}

func TestApplyCDIDevices(t *testing.T) {
	cdi := func(names ...string) *api.ContainerAdjustment {
		a := &api.ContainerAdjustment{}
		for _, n := range names {
			a.CDIDevices = append(a.CDIDevices, &api.CDIDevice{Name: n})
		}
		return a
	}
	runApplyCases(t, []applyCase{
		{"recorded in annotation", nil, cdi("vendor.com/gpu=0", "vendor.com/gpu=1"), nil,
			&rspec.Spec{Annotations: map[string]string{CDIAnnotationKey: "vendor.com/gpu=0,vendor.com/gpu=1"}}},
		{"merged with recorded", &rspec.Spec{Annotations: map[string]string{CDIAnnotationKey: "vendor.com/gpu=0"}},
			cdi("vendor.com/gpu=1", "vendor.com/gpu=0"), nil,
			&rspec.Spec{Annotations: map[string]string{CDIAnnotationKey: "vendor.com/gpu=0,vendor.com/gpu=1"}}},
	})

	var got []string
	inject := WithCDIDeviceInjector(func(s *rspec.Spec, names []string) error {
		got = names
		s.Linux = &rspec.Linux{Devices: []rspec.LinuxDevice{{Path: "/dev/gpu0", Type: "c", Major: 195}}}
		return nil
	})
	spec := &rspec.Spec{}
	if err := Apply(spec, cdi("vendor.com/gpu=0"), inject); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(got) != 1 || got[0] != "vendor.com/gpu=0" {
		t.Errorf("injector got %q, want [vendor.com/gpu=0]", got)
	}
	assertSpec(t, spec, &rspec.Spec{Linux: &rspec.Linux{Devices: []rspec.LinuxDevice{{Path: "/dev/gpu0", Type: "c", Major: 195}}}})
}
