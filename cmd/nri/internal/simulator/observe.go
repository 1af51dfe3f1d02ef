package simulator

import (
	"context"

	"github.com/nrikit/nrikit/adaptation"
)

// observerOptions connects the timeline to the runtime's observers, which
// report every plugin request with its answer, and every answer the
// runtime refused.
func (s *Simulator) observerOptions() []adaptation.Option {
	return []adaptation.Option{
		adaptation.WithObserver(func(ctx context.Context, c adaptation.Call) {
			s.tl.observe(ctx, c.Plugin, c.Event, c.Duration, c.Response, c.Err)
		}),
		adaptation.WithRefusalObserver(func(ctx context.Context, r adaptation.Refusal) {
			s.tl.refused(ctx, r.Plugin, r.Event, r.Err, r.Audited)
		}),
	}
}

// validatorOptions installs the default validator, if the scenario
// configures it.
func (s *Simulator) validatorOptions() []adaptation.Option {
	if s.sc.DefaultValidator == nil {
		return nil
	}
	return []adaptation.Option{adaptation.WithDefaultValidator(*s.sc.DefaultValidator)}
}
