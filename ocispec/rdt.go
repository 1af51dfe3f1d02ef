package ocispec

import (
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// planRdt applies an RDT adjustment: remove clears linux.intelRdt, then the
// CLOS ID, schemata and monitoring flag that are set are applied.
func planRdt(r *api.LinuxRdt) (step, error) {
	if r == nil {
		return nil, nil
	}
	remove := r.GetRemove()
	closID, schemata, monitoring := r.GetClosId().Get(), r.GetSchemata().Get(), r.GetEnableMonitoring().Get()
	if schemata != nil {
		c := slices.Clone(*schemata)
		schemata = &c
	}
	if !remove && closID == nil && schemata == nil && monitoring == nil {
		return nil, nil
	}
	return func(s *rspec.Spec) error {
		l := ensureLinux(s)
		if remove {
			l.IntelRdt = nil
		}
		if closID == nil && schemata == nil && monitoring == nil {
			return nil
		}
		if l.IntelRdt == nil {
			l.IntelRdt = &rspec.LinuxIntelRdt{}
		}
		if closID != nil {
			l.IntelRdt.ClosID = *closID
		}
		if schemata != nil {
			l.IntelRdt.Schemata = *schemata
		}
		if monitoring != nil {
			l.IntelRdt.EnableMonitoring = *monitoring
		}
		return nil
	}, nil
}

// rdtFromOCI converts the spec's RDT settings.
func rdtFromOCI(o *rspec.LinuxIntelRdt) *api.LinuxRdt {
	if o == nil {
		return nil
	}
	r := &api.LinuxRdt{}
	if o.ClosID != "" {
		r.ClosId = &api.OptionalString{Value: o.ClosID}
	}
	if o.Schemata != nil {
		r.Schemata = &api.OptionalRepeatedString{Value: slices.Clone(o.Schemata)}
	}
	if o.EnableMonitoring {
		r.EnableMonitoring = &api.OptionalBool{Value: true}
	}
	return r
}
