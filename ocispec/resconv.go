package ocispec

import (
	"maps"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// ToLinuxResources converts OCI spec resources to the protocol's (nil for
// nil). Fields the protocol cannot express (CPU burst and idle, block I/O
// and network settings, RDMA, memory's checkBeforeUpdate) are dropped; an
// unset pids limit becomes 0, as upstream reports it.
func ToLinuxResources(o *rspec.LinuxResources) *api.LinuxResources {
	if o == nil {
		return nil
	}
	r := &api.LinuxResources{}
	if m := o.Memory; m != nil {
		r.Memory = &api.LinuxMemory{
			Limit:            optInt64(m.Limit),
			Reservation:      optInt64(m.Reservation),
			Swap:             optInt64(m.Swap),
			Kernel:           optInt64(m.Kernel), //lint:ignore SA1019 kernel memory is still part of the protocol
			KernelTcp:        optInt64(m.KernelTCP),
			Swappiness:       optUInt64(m.Swappiness),
			DisableOomKiller: optBool(m.DisableOOMKiller),
			UseHierarchy:     optBool(m.UseHierarchy),
		}
	}
	if c := o.CPU; c != nil {
		r.Cpu = &api.LinuxCPU{
			Shares:          optUInt64(c.Shares),
			Quota:           optInt64(c.Quota),
			Period:          optUInt64(c.Period),
			RealtimeRuntime: optInt64(c.RealtimeRuntime),
			RealtimePeriod:  optUInt64(c.RealtimePeriod),
			Cpus:            c.Cpus,
			Mems:            c.Mems,
		}
	}
	for _, h := range o.HugepageLimits {
		r.HugepageLimits = append(r.HugepageLimits, &api.HugepageLimit{PageSize: h.Pagesize, Limit: h.Limit})
	}
	for _, d := range o.Devices {
		r.Devices = append(r.Devices, &api.LinuxDeviceCgroup{
			Allow: d.Allow, Type: d.Type, Major: optInt64(d.Major), Minor: optInt64(d.Minor), Access: d.Access,
		})
	}
	if p := o.Pids; p != nil {
		r.Pids = &api.LinuxPids{}
		if p.Limit != nil {
			r.Pids.Limit = *p.Limit
		}
	}
	if len(o.Unified) > 0 {
		r.Unified = maps.Clone(o.Unified)
	}
	return r
}

// FromLinuxResources converts the protocol's resources to OCI spec
// resources (nil for nil). Block I/O and RDT classes are not converted:
// only the runtime can resolve them (see WithBlockIOClassResolver). A
// negative pids limit (api's "unlimited") leaves the limit unset.
func FromLinuxResources(r *api.LinuxResources) *rspec.LinuxResources {
	if r == nil {
		return nil
	}
	o := &rspec.LinuxResources{}
	applyMemory(o, r.GetMemory(), false)
	applyCPU(o, r.GetCpu())
	for _, h := range r.GetHugepageLimits() {
		o.HugepageLimits = append(o.HugepageLimits, rspec.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	for _, d := range r.GetDevices() {
		o.Devices = append(o.Devices, rspec.LinuxDeviceCgroup{
			Allow: d.GetAllow(), Type: d.GetType(), Major: d.GetMajor().Get(), Minor: d.GetMinor().Get(), Access: d.GetAccess(),
		})
	}
	if p := r.GetPids(); p != nil {
		applyPids(o, p.GetLimit())
	}
	if len(r.GetUnified()) > 0 {
		o.Unified = maps.Clone(r.GetUnified())
	}
	return o
}

// optInt64 wraps an optional int64 from the spec.
func optInt64(v *int64) *api.OptionalInt64 {
	if v == nil {
		return nil
	}
	return &api.OptionalInt64{Value: *v}
}

// optUInt64 wraps an optional uint64 from the spec.
func optUInt64(v *uint64) *api.OptionalUInt64 {
	if v == nil {
		return nil
	}
	return &api.OptionalUInt64{Value: *v}
}

// optBool wraps an optional bool from the spec.
func optBool(v *bool) *api.OptionalBool {
	if v == nil {
		return nil
	}
	return &api.OptionalBool{Value: *v}
}
