package ocispec

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// resourceMode tells planResources whether it applies an adjustment of a
// container being created or an update of an existing one.
type resourceMode int

const (
	// resourceAdjustment: device cgroup rules apply, and a memory limit
	// without a swap limit disables swap (as upstream's generator).
	resourceAdjustment resourceMode = iota
	// resourceUpdate: device cgroup rules are ignored, swap is left alone.
	resourceUpdate
)

// planResources applies linux resources: memory, CPU, huge pages, unified,
// pids, device cgroup rules (adjustments only), block I/O and RDT classes.
// Classes are resolved now, so that resolver errors leave the spec alone.
func planResources(cfg *config, r *api.LinuxResources, mode resourceMode) (step, error) {
	if r == nil {
		return nil, nil
	}
	huge, err := hugepagesToOCI(r.GetHugepageLimits())
	if err != nil {
		return nil, err
	}
	for k := range r.GetUnified() {
		if k == "" {
			return nil, invalidf("linux.resources.unified", "empty key")
		}
	}
	unified := maps.Clone(r.GetUnified())
	var rules []rspec.LinuxDeviceCgroup
	if mode == resourceAdjustment {
		if rules, err = deviceRulesToOCI(r.GetDevices()); err != nil {
			return nil, err
		}
	}
	classes, err := resolveClasses(cfg, r)
	if err != nil {
		return nil, err
	}
	mem, cpu, pids := r.GetMemory(), r.GetCpu(), r.GetPids()
	return func(s *rspec.Spec) error {
		res := ensureResources(s)
		applyMemory(res, mem, mode == resourceAdjustment)
		applyCPU(res, cpu)
		for _, h := range huge {
			setHugepageLimit(res, h)
		}
		if len(unified) > 0 {
			if res.Unified == nil {
				res.Unified = map[string]string{}
			}
			maps.Copy(res.Unified, unified)
		}
		if pids != nil {
			applyPids(res, pids.GetLimit())
		}
		res.Devices = append(res.Devices, rules...)
		classes.apply(s)
		if cfg.checkResources != nil {
			return fieldErr("linux.resources", cfg.checkResources(res))
		}
		return nil
	}, nil
}

// setPtr stores a copy of *v in *dst, if v is set.
func setPtr[T any](dst **T, v *T) {
	if v != nil {
		c := *v
		*dst = &c
	}
}

// applyMemory sets the memory fields present in m. With disableSwap, a
// positive limit without a swap limit also sets swap to the limit.
func applyMemory(res *rspec.LinuxResources, m *api.LinuxMemory, disableSwap bool) {
	if m == nil {
		return
	}
	if res.Memory == nil {
		res.Memory = &rspec.LinuxMemory{}
	}
	o := res.Memory
	setPtr(&o.Limit, m.GetLimit().Get())
	setPtr(&o.Reservation, m.GetReservation().Get())
	setPtr(&o.Swap, m.GetSwap().Get())
	setPtr(&o.Kernel, m.GetKernel().Get()) //lint:ignore SA1019 kernel memory is still part of the protocol
	setPtr(&o.KernelTCP, m.GetKernelTcp().Get())
	setPtr(&o.Swappiness, m.GetSwappiness().Get())
	setPtr(&o.DisableOOMKiller, m.GetDisableOomKiller().Get())
	setPtr(&o.UseHierarchy, m.GetUseHierarchy().Get())
	if l := m.GetLimit(); disableSwap && l != nil && l.GetValue() > 0 && m.GetSwap() == nil {
		setPtr(&o.Swap, l.Get())
	}
}

// applyCPU sets the CPU fields present in c.
func applyCPU(res *rspec.LinuxResources, c *api.LinuxCPU) {
	if c == nil {
		return
	}
	if res.CPU == nil {
		res.CPU = &rspec.LinuxCPU{}
	}
	o := res.CPU
	setPtr(&o.Shares, c.GetShares().Get())
	setPtr(&o.Quota, c.GetQuota().Get())
	setPtr(&o.Period, c.GetPeriod().Get())
	setPtr(&o.RealtimeRuntime, c.GetRealtimeRuntime().Get())
	setPtr(&o.RealtimePeriod, c.GetRealtimePeriod().Get())
	if c.GetCpus() != "" {
		o.Cpus = c.GetCpus()
	}
	if c.GetMems() != "" {
		o.Mems = c.GetMems()
	}
}

// applyPids sets the pids limit; a negative limit (api's "unlimited")
// clears it.
func applyPids(res *rspec.LinuxResources, limit int64) {
	if res.Pids == nil {
		res.Pids = &rspec.LinuxPids{}
	}
	if limit < 0 {
		res.Pids.Limit = nil
		return
	}
	res.Pids.Limit = &limit
}

// setHugepageLimit replaces the limit for h's page size, or appends h.
func setHugepageLimit(res *rspec.LinuxResources, h rspec.LinuxHugepageLimit) {
	for i := range res.HugepageLimits {
		if res.HugepageLimits[i].Pagesize == h.Pagesize {
			res.HugepageLimits[i] = h
			return
		}
	}
	res.HugepageLimits = append(res.HugepageLimits, h)
}

// hugepagesToOCI validates and converts huge page limits.
func hugepagesToOCI(in []*api.HugepageLimit) ([]rspec.LinuxHugepageLimit, error) {
	var out []rspec.LinuxHugepageLimit
	for i, h := range in {
		if err := checkPageSize(h.GetPageSize()); err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("linux.resources.hugepage_limits[%d].page_size", i), Err: err}
		}
		out = append(out, rspec.LinuxHugepageLimit{Pagesize: h.GetPageSize(), Limit: h.GetLimit()})
	}
	return out, nil
}

// checkPageSize accepts a positive size with a unit (K, M, G, T or P,
// optionally followed by B, in either case): "2MB", "1GB", "64KB", "1M".
func checkPageSize(size string) error {
	i := strings.IndexFunc(size, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(size)
	}
	n, err := strconv.ParseUint(size[:i], 10, 64)
	unit := strings.TrimSuffix(strings.ToUpper(size[i:]), "B")
	if err != nil || n == 0 || len(unit) != 1 || !strings.Contains("KMGTP", unit) {
		return fmt.Errorf("%w: bad huge page size %q (want a positive size such as 2MB or 1GB)", ErrInvalid, size)
	}
	return nil
}

// deviceRulesToOCI validates and converts device cgroup rules.
func deviceRulesToOCI(in []*api.LinuxDeviceCgroup) ([]rspec.LinuxDeviceCgroup, error) {
	var out []rspec.LinuxDeviceCgroup
	for i, d := range in {
		if err := checkDeviceRule(fmt.Sprintf("linux.resources.devices[%d]", i), d); err != nil {
			return nil, err
		}
		out = append(out, rspec.LinuxDeviceCgroup{
			Allow: d.GetAllow(), Type: d.GetType(), Major: d.GetMajor().Get(), Minor: d.GetMinor().Get(), Access: d.GetAccess(),
		})
	}
	return out, nil
}
