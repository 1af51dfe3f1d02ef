package ocispec

import (
	"errors"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

func update(r *api.LinuxResources) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: "c1", Linux: &api.LinuxContainerUpdate{Resources: r}}
}

func TestApplyUpdate(t *testing.T) {
	base := withResources(rspec.LinuxResources{
		Memory:  &rspec.LinuxMemory{Limit: ptr(int64(100)), Swap: ptr(int64(200))},
		CPU:     &rspec.LinuxCPU{Shares: ptr(uint64(2)), Cpus: "0-3"},
		Devices: []rspec.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
	})
	cases := []struct {
		name string
		upd  *api.ContainerUpdate
		opts []Option
		want *rspec.Spec
	}{
		{"memory limit keeps swap", update(&api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 150}}}), nil,
			withResources(rspec.LinuxResources{
				Memory: &rspec.LinuxMemory{Limit: ptr(int64(150)), Swap: ptr(int64(200))}, CPU: base.Linux.Resources.CPU, Devices: base.Linux.Resources.Devices,
			})},
		{"cpu, hugepages, unified, pids", update(&api.LinuxResources{
			Cpu:            &api.LinuxCPU{Quota: &api.OptionalInt64{Value: 1000}, Cpus: "4-5"},
			HugepageLimits: []*api.HugepageLimit{{PageSize: "2MB", Limit: 4096}},
			Unified:        map[string]string{"memory.oom.group": "1"},
			Pids:           &api.LinuxPids{Limit: 64},
		}), nil, withResources(rspec.LinuxResources{
			Memory:         base.Linux.Resources.Memory,
			CPU:            &rspec.LinuxCPU{Shares: ptr(uint64(2)), Quota: ptr(int64(1000)), Cpus: "4-5"},
			HugepageLimits: []rspec.LinuxHugepageLimit{{Pagesize: "2MB", Limit: 4096}},
			Unified:        map[string]string{"memory.oom.group": "1"},
			Pids:           &rspec.LinuxPids{Limit: ptr(int64(64))},
			Devices:        base.Linux.Resources.Devices,
		})},
		{"device rules ignored", update(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Type: "a", Access: "rwm"}}}), nil, base},
		{"block I/O class", update(&api.LinuxResources{BlockioClass: &api.OptionalString{Value: "slow"}}),
			[]Option{WithBlockIOClassResolver(func(string) (*rspec.LinuxBlockIO, error) {
				return &rspec.LinuxBlockIO{Weight: ptr(uint16(100))}, nil
			})}, withResources(rspec.LinuxResources{
				Memory: base.Linux.Resources.Memory, CPU: base.Linux.Resources.CPU, Devices: base.Linux.Resources.Devices,
				BlockIO: &rspec.LinuxBlockIO{Weight: ptr(uint16(100))},
			})},
		{"nil update", nil, nil, base},
		{"no resources", &api.ContainerUpdate{ContainerId: "c1"}, nil, base},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := cloneSpec(t, base)
			if err := ApplyUpdate(spec, tc.upd, tc.opts...); err != nil {
				t.Fatalf("ApplyUpdate: %v", err)
			}
			assertSpec(t, spec, tc.want)
		})
	}
}

func TestApplyUpdateErrors(t *testing.T) {
	if err := ApplyUpdate(nil, update(&api.LinuxResources{})); err == nil {
		t.Error("ApplyUpdate(nil spec) succeeded")
	}
	spec := withResources(rspec.LinuxResources{CPU: &rspec.LinuxCPU{Cpus: "0"}})
	before := cloneSpec(t, spec)
	err := ApplyUpdate(spec, update(&api.LinuxResources{
		Cpu:            &api.LinuxCPU{Cpus: "1"},
		HugepageLimits: []*api.HugepageLimit{{PageSize: "-1GB"}},
	}))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "linux.resources.hugepage_limits[0].page_size" || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error = %v, want invalid hugepage page size", err)
	}
	assertSpec(t, spec, before)

	boom := errors.New("over capacity")
	err = ApplyUpdate(spec, update(&api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "1"}}),
		WithCheckResources(func(r *rspec.LinuxResources) error {
			if r.CPU.Cpus != "1" {
				t.Errorf("checker saw cpus %q, want the updated 1", r.CPU.Cpus)
			}
			return boom
		}))
	if !errors.Is(err, boom) || !errors.As(err, &fe) || fe.Field != "linux.resources" {
		t.Fatalf("error = %v, want the checker's error for linux.resources", err)
	}
}
