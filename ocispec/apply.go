package ocispec

import (
	"errors"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// step is one validated change, ready to be made to a spec.
type step func(*rspec.Spec) error

// planner validates one part of an adjustment and returns the step that
// applies it (nil if there is nothing to do).
type planner func() (step, error)

var errNilSpec = errors.New("ocispec: nil spec")

// Apply applies a (merged) container adjustment to spec in place. Removal
// markers ("-KEY") remove annotations by key, mounts by destination,
// environment variables by name, devices by path, namespaces by type,
// sysctls by key and net devices by host interface name. See the package
// documentation for the semantics of each field.
//
// The whole adjustment is validated first: on an invalid value Apply
// returns a *FieldError matching ErrInvalid and leaves spec unchanged.
func Apply(spec *rspec.Spec, adj *api.ContainerAdjustment, opts ...Option) error {
	if spec == nil {
		return errNilSpec
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if adj == nil {
		return nil
	}
	linux := adj.GetLinux()
	res := linux.GetResources()
	planners := []planner{
		func() (step, error) { return planAnnotations(cfg, adj.GetAnnotations()) },
		func() (step, error) { return planEnv(adj.GetEnv()) },
		func() (step, error) { return planArgs(adj.GetArgs()) },
		func() (step, error) { return planHooks(adj.GetHooks()) },
		func() (step, error) { return planCDIDevices(cfg, adj.GetCDIDevices()) },
		func() (step, error) { return planDevices(linux.GetDevices()) },
		func() (step, error) { return planNamespaces(linux.GetNamespaces()) },
		func() (step, error) { return planSysctl(cfg, linux.GetSysctl()) },
		func() (step, error) { return planNetDevices(linux.GetNetDevices()) },
		func() (step, error) { return planResources(cfg, res, resourceAdjustment) },
		func() (step, error) { return planRdt(linux.GetRdt()) },
		func() (step, error) { return planMounts(cfg, adj.GetMounts()) },
		func() (step, error) { return planRlimits(adj.GetRlimits()) },
	}
	return run(spec, planners, linux)
}

// ApplyUpdate applies the resources of a container update to the spec's
// linux.resources. Memory, CPU, huge page, unified, pids, block I/O class
// and RDT class settings are applied; device cgroup rules are not (an
// update cannot change device access). Unlike Apply, setting the memory
// limit leaves the swap limit alone.
func ApplyUpdate(spec *rspec.Spec, upd *api.ContainerUpdate, opts ...Option) error {
	if spec == nil {
		return errNilSpec
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	res := upd.GetLinux().GetResources()
	if res == nil {
		return nil
	}
	return run(spec, []planner{
		func() (step, error) { return planResources(cfg, res, resourceUpdate) },
	}, nil)
}

// run validates everything with planners and, when linux is set, with the
// plan functions of its simple fields (linuxFieldPlans, generated from
// the proto), then applies the steps in order.
func run(spec *rspec.Spec, planners []planner, linux *api.LinuxContainerAdjustment) error {
	steps := make([]step, 0, len(planners)+len(linuxFieldPlans))
	for _, p := range planners {
		s, err := p()
		if err != nil {
			return err
		}
		if s != nil {
			steps = append(steps, s)
		}
	}
	for _, p := range linuxFieldPlans {
		if linux == nil {
			break
		}
		s, err := p(linux)
		if err != nil {
			return err
		}
		if s != nil {
			steps = append(steps, s)
		}
	}
	for _, s := range steps {
		if err := s(spec); err != nil {
			return err
		}
	}
	return nil
}

// ensureProcess returns spec.Process, creating it if needed.
func ensureProcess(spec *rspec.Spec) *rspec.Process {
	if spec.Process == nil {
		spec.Process = &rspec.Process{}
	}
	return spec.Process
}

// ensureLinux returns spec.Linux, creating it if needed.
func ensureLinux(spec *rspec.Spec) *rspec.Linux {
	if spec.Linux == nil {
		spec.Linux = &rspec.Linux{}
	}
	return spec.Linux
}

// ensureResources returns spec.Linux.Resources, creating it if needed.
func ensureResources(spec *rspec.Spec) *rspec.LinuxResources {
	l := ensureLinux(spec)
	if l.Resources == nil {
		l.Resources = &rspec.LinuxResources{}
	}
	return l.Resources
}
