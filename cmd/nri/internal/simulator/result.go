package simulator

import (
	"fmt"
	"slices"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/ocispec"
)

// report assembles the run's report.
func (s *Simulator) report(a *adaptation.Adaptation, took time.Duration, failures []string) *report.Report {
	infos := a.Plugins()
	events := s.tl.snapshot()
	subs := subscribers(infos)
	calls, errs, filtered := map[string]int{}, map[string]int{}, map[string]int{}
	for i := range events {
		e := &events[i]
		for _, c := range e.Calls {
			calls[c.Plugin]++
			if c.Error != "" {
				errs[c.Plugin]++
			}
		}
		if e.Step == 0 {
			continue // not delivered through the runtime's dispatch
		}
		for _, p := range subs[e.Event] {
			if !slices.Contains(e.Called, p) {
				e.Filtered = append(e.Filtered, p)
				filtered[p]++
			}
		}
	}
	// A plugin that did not register fails the run as a step does: the
	// steps went without it, and the summary must say so.
	regErrs := s.registrationErrors()
	for _, e := range regErrs {
		failures = append(failures, fmt.Sprintf("plugin %s did not register: %s", e.Plugin, e.Reason))
	}
	r := &report.Report{
		Scenario:           s.sc.Name,
		Runtime:            s.cfg.runtimeName + " " + s.cfg.runtimeVersion,
		OK:                 len(failures) == 0,
		Failures:           failures,
		Events:             events,
		RegistrationErrors: regErrs,
		DurationMs:         ms(took),
	}
	for _, p := range infos {
		var names []string
		for _, e := range p.Events.Events() {
			names = append(names, e.Name())
		}
		full := p.FullName()
		r.Plugins = append(r.Plugins, report.Plugin{
			Name: p.Name, Index: p.Index, ID: full, Kind: p.Kind.String(), PID: p.PID, Events: names,
			Calls: calls[full], Filtered: filtered[full], Errors: errs[full],
		})
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	for _, c := range s.store.order {
		rc := report.Container{
			Pod: c.pod.sc.Name, Namespace: c.pod.sc.Namespace, Name: c.sc.Name, ID: c.sc.ID,
			State: c.status, Error: c.err,
		}
		if c.spec != nil {
			rc.Spec = c.spec
			if c.spec.Process != nil {
				rc.Env = slices.Clone(c.spec.Process.Env)
			}
			rc.Diff = ocispec.Diff(c.proposed, c.spec)
		}
		r.Containers = append(r.Containers, rc)
	}
	return r
}
