package ocispec

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// planScheduler sets process.scheduler; policy SCHED_NONE clears it.
func planScheduler(sch *api.LinuxScheduler) (step, error) {
	if sch == nil {
		return nil, nil
	}
	o, err := schedulerToOCI(sch)
	if err != nil {
		return nil, err
	}
	return func(s *rspec.Spec) error {
		ensureProcess(s).Scheduler = o
		return nil
	}, nil
}

// schedulerToOCI validates and converts a scheduler (nil for SCHED_NONE).
func schedulerToOCI(sch *api.LinuxScheduler) (*rspec.Scheduler, error) {
	policy, ok := api.LinuxSchedulerPolicy_name[int32(sch.GetPolicy())]
	if !ok {
		return nil, invalidf("linux.scheduler.policy", "unknown scheduling policy %d", sch.GetPolicy())
	}
	var flags []rspec.LinuxSchedulerFlag
	for i, f := range sch.GetFlags() {
		name, ok := api.LinuxSchedulerFlag_name[int32(f)]
		if !ok {
			return nil, invalidf(fmt.Sprintf("linux.scheduler.flags[%d]", i), "unknown scheduling flag %d", f)
		}
		flags = append(flags, rspec.LinuxSchedulerFlag(name))
	}
	if sch.GetPolicy() == api.LinuxSchedulerPolicy_SCHED_NONE {
		return nil, nil
	}
	return &rspec.Scheduler{
		Policy:   rspec.LinuxSchedulerPolicy(policy),
		Nice:     sch.GetNice(),
		Priority: sch.GetPriority(),
		Flags:    flags,
		Runtime:  sch.GetRuntime(),
		Deadline: sch.GetDeadline(),
		Period:   sch.GetPeriod(),
	}, nil
}

// schedulerFromOCI converts the spec's scheduler.
func schedulerFromOCI(o *rspec.Scheduler) *api.LinuxScheduler {
	if o == nil {
		return nil
	}
	sch := &api.LinuxScheduler{
		Policy:   api.LinuxSchedulerPolicy(api.LinuxSchedulerPolicy_value[string(o.Policy)]),
		Nice:     o.Nice,
		Priority: o.Priority,
		Runtime:  o.Runtime,
		Deadline: o.Deadline,
		Period:   o.Period,
	}
	for _, f := range o.Flags {
		sch.Flags = append(sch.Flags, api.LinuxSchedulerFlag(api.LinuxSchedulerFlag_value[string(f)]))
	}
	return sch
}

// planMemoryPolicy sets linux.memoryPolicy.
func planMemoryPolicy(p *api.LinuxMemoryPolicy) (step, error) {
	if p == nil {
		return nil, nil
	}
	mode, ok := api.MpolMode_name[int32(p.GetMode())]
	if !ok {
		return nil, invalidf("linux.memory_policy.mode", "unknown memory policy mode %d", p.GetMode())
	}
	o := &rspec.LinuxMemoryPolicy{Mode: rspec.MemoryPolicyModeType(mode), Nodes: p.GetNodes()}
	for i, f := range p.GetFlags() {
		name, ok := api.MpolFlag_name[int32(f)]
		if !ok {
			return nil, invalidf(fmt.Sprintf("linux.memory_policy.flags[%d]", i), "unknown memory policy flag %d", f)
		}
		o.Flags = append(o.Flags, rspec.MemoryPolicyFlagType(name))
	}
	return func(s *rspec.Spec) error {
		ensureLinux(s).MemoryPolicy = o
		return nil
	}, nil
}
