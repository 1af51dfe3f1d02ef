package ocispec

import (
	"fmt"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// planCgroupsPath sets linux.cgroupsPath, if path is not empty.
func planCgroupsPath(path string) (step, error) {
	if path == "" {
		return nil, nil
	}
	return func(s *rspec.Spec) error {
		ensureLinux(s).CgroupsPath = path
		return nil
	}, nil
}

// planOomScoreAdj sets process.oomScoreAdj, if adj is set.
func planOomScoreAdj(adj *api.OptionalInt) (step, error) {
	if adj == nil {
		return nil, nil
	}
	v := int(adj.GetValue())
	return func(s *rspec.Spec) error {
		ensureProcess(s).OOMScoreAdj = &v
		return nil
	}, nil
}

// planIoPriority sets process.ioPriority; class IOPRIO_CLASS_NONE clears it.
func planIoPriority(p *api.LinuxIOPriority) (step, error) {
	if p == nil {
		return nil, nil
	}
	o, err := ioPriorityToOCI(p)
	if err != nil {
		return nil, err
	}
	return func(s *rspec.Spec) error {
		ensureProcess(s).IOPriority = o
		return nil
	}, nil
}

// ioPriorityToOCI converts an I/O priority (nil for class NONE).
func ioPriorityToOCI(p *api.LinuxIOPriority) (*rspec.LinuxIOPriority, error) {
	name, ok := api.IOPrioClass_name[int32(p.GetClass())]
	if !ok {
		return nil, invalidf("linux.io_priority.class", "unknown I/O priority class %d", p.GetClass())
	}
	if p.GetClass() == api.IOPrioClass_IOPRIO_CLASS_NONE {
		return nil, nil
	}
	return &rspec.LinuxIOPriority{Class: rspec.IOPriorityClass(name), Priority: int(p.GetPriority())}, nil
}

// ioPriorityFromOCI converts the spec's I/O priority.
func ioPriorityFromOCI(o *rspec.LinuxIOPriority) *api.LinuxIOPriority {
	if o == nil {
		return nil
	}
	return &api.LinuxIOPriority{
		Class:    api.IOPrioClass(api.IOPrioClass_value[string(o.Class)]),
		Priority: int32(o.Priority),
	}
}

// planRlimits replaces the limit of each given type, or appends it.
func planRlimits(rlimits []*api.POSIXRlimit) (step, error) {
	var add []rspec.POSIXRlimit
	for i, l := range rlimits {
		if l == nil {
			continue
		}
		if !strings.HasPrefix(l.GetType(), "RLIMIT_") {
			return nil, invalidf(fmt.Sprintf("rlimits[%d].type", i), "unknown resource limit type %q", l.GetType())
		}
		add = append(add, rspec.POSIXRlimit{Type: l.GetType(), Hard: l.GetHard(), Soft: l.GetSoft()})
	}
	if len(add) == 0 {
		return nil, nil
	}
	return func(s *rspec.Spec) error {
		p := ensureProcess(s)
	next:
		for _, l := range add {
			for i := range p.Rlimits {
				if p.Rlimits[i].Type == l.Type {
					p.Rlimits[i] = l
					continue next
				}
			}
			p.Rlimits = append(p.Rlimits, l)
		}
		return nil
	}, nil
}

// rlimitsFromOCI converts the spec's resource limits.
func rlimitsFromOCI(o []rspec.POSIXRlimit) []*api.POSIXRlimit {
	var out []*api.POSIXRlimit
	for _, l := range o {
		out = append(out, &api.POSIXRlimit{Type: l.Type, Hard: l.Hard, Soft: l.Soft})
	}
	return out
}
