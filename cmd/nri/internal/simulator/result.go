package simulator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/policy"
)

// report assembles the run's report.
func (s *Simulator) report(a *adaptation.Adaptation, took time.Duration, failures []string) *report.Report {
	infos := a.Plugins()
	events := s.tl.snapshot()
	subs := subscribers(infos)
	calls, errs, refused, audited, filtered := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	for i := range events {
		e := &events[i]
		for _, c := range e.Calls {
			calls[c.Plugin]++
			if c.Error != "" {
				errs[c.Plugin]++
			}
			if c.Refused {
				refused[c.Plugin]++
			}
			if c.Audited {
				audited[c.Plugin]++
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
	// A plugin that did not register, or that the runtime lost, fails the
	// run as a step does: the steps went without it, and the summary must
	// say so.
	regErrs := s.registrationErrors()
	for _, e := range regErrs {
		failures = append(failures, fmt.Sprintf("plugin %s did not register: %s", e.Plugin, e.Reason))
	}
	lost, lostInfos := s.lost(events, regErrs)
	for _, l := range lost {
		failures = append(failures, fmt.Sprintf("plugin %s was lost %s: %s", l.Plugin, l.When(), l.Reason))
	}
	pol, polReport := s.policy()
	r := &report.Report{
		Scenario:           s.sc.Name,
		Runtime:            s.cfg.runtimeName + " " + s.cfg.runtimeVersion,
		Policy:             polReport,
		OK:                 len(failures) == 0,
		Failures:           failures,
		Events:             events,
		RegistrationErrors: regErrs,
		Lost:               lost,
		DurationMs:         ms(took),
	}
	state := map[string]string{}
	for _, p := range infos {
		state[p.FullName()] = report.StateRegistered
	}
	for full, p := range lostInfos {
		if _, ok := state[full]; !ok && p.Name != "" {
			infos = append(infos, p)
		}
		state[full] = report.StateLost
	}
	// In invocation order, lost plugins included.
	slices.SortStableFunc(infos, func(x, y adaptation.PluginInfo) int {
		return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Name, y.Name))
	})
	for _, p := range infos {
		var names []string
		for _, e := range p.Events.Events() {
			names = append(names, e.Name())
		}
		full := p.FullName()
		rp := report.Plugin{
			Name: p.Name, Index: p.Index, ID: full, Kind: p.Kind.String(), PID: p.PID, Events: names,
			Calls: calls[full], Filtered: filtered[full], Errors: errs[full], Refused: refused[full], Audited: audited[full], State: state[full],
		}
		if pol != nil {
			rp.Grant = pol.GrantFor(p.Index, p.Name).String()
			rp.GrantNotes = pol.NamedWithoutExtension(p.Index, p.Name)
		}
		r.Plugins = append(r.Plugins, rp)
	}
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	for _, c := range s.store.order {
		rc := report.Container{
			Pod: c.pod.sc.Name, Namespace: c.pod.sc.Namespace, Name: c.sc.Name, ID: c.sc.ID,
			State: c.status, Error: c.err, UpdatedBy: updatedBy(events, c),
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

// updatedBy returns the steps whose updateContainer of c succeeded.
func updatedBy(events []report.Event, c *container) []int {
	var steps []int
	for _, e := range events {
		if e.Step > 0 && e.Event == "UpdateContainer" && e.Error == "" && e.Container == c.sc.Name &&
			e.Pod == c.pod.sc.Name && e.Namespace == c.pod.sc.Namespace {
			steps = append(steps, e.Step)
		}
	}
	return steps
}

// policy returns the policy in force, and how the report names it (nil
// for none): --policy replaces the scenario's.
func (s *Simulator) policy() (*policy.Policy, *report.Policy) {
	switch {
	case s.cfg.policy != nil:
		return s.cfg.policy, &report.Policy{Source: "--policy", File: s.cfg.policy.File()}
	case s.sc.CompiledPolicy != nil:
		return s.sc.CompiledPolicy, &report.Policy{Source: "scenario", File: s.sc.File, Line: s.sc.PolicyLine}
	}
	return nil, nil
}

// lost returns the plugins the runtime disconnected while the steps were
// played, each with the request it failed (the last failed call of the
// step it was lost in), and the information last seen of each; a plugin
// disconnected because its registration failed is one of regErrs, not
// lost.
func (s *Simulator) lost(events []report.Event, regErrs []report.RegistrationError) ([]report.Lost, map[string]adaptation.PluginInfo) {
	gone, infos := s.members.departures()
	var out []report.Lost
	for _, d := range gone {
		if slices.ContainsFunc(regErrs, func(e report.RegistrationError) bool { return e.Plugin == d.plugin }) {
			delete(infos, d.plugin)
			continue
		}
		l := report.Lost{Plugin: d.plugin, Step: d.step, Reason: "the runtime disconnected it: " + d.reason}
		for _, e := range events {
			for _, c := range e.Calls {
				if e.Step == d.step && c.Plugin == d.plugin && c.Error != "" && !c.Refused {
					l.Event, l.Reason = e.Event, c.Error+"; the runtime disconnected it"
				}
			}
		}
		out = append(out, l)
	}
	return out, infos
}
