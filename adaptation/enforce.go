package adaptation

import (
	"cmp"
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/protobuf/proto"
)

// Enforcement of the plugins' grants (docs/policy.md, "What a refusal
// does"): each plugin's own answer is checked against its grant before
// the dispatcher takes it in (checkGrant finds, enforceGrant from
// checkAnswer decides), and so are
// the updates of its Synchronize answer (deniedUpdates) and its
// unsolicited UpdateContainers (see updateContainers).

// DeniedRecorder is an optional interface of a [MetricsRecorder]: a
// recorder that implements it is told of every change a plugin's grant
// refused, by plugin (IDX-NAME) and field (a [capability.Capability]'s stable
// name, one of a fixed set), as the nri_plugin_denied_total metric counts
// them with action [ActionDenied]; if it implements [RequestRecorder]
// too, not after it was told to forget the plugin. Changes a grant in
// audit mode lets through are told to an [AuditedRecorder] instead.
type DeniedRecorder interface {
	RecordDenied(ctx context.Context, plugin, field string)
}

// AuditedRecorder is an optional interface of a [MetricsRecorder]: a
// recorder that implements it is told of every change a plugin's grant
// does not allow but, being in audit mode (policy.ActionAudit), let
// through (logged and applied), by plugin and field as
// [DeniedRecorder.RecordDenied] is told of refusals, as the
// nri_plugin_denied_total metric counts them with action
// [ActionAudited]; if it implements [RequestRecorder] too, not after it
// was told to forget the plugin.
type AuditedRecorder interface {
	RecordAudited(ctx context.Context, plugin, field string)
}

// The values of the action label of [MetricDenied]: which of
// [DeniedRecorder] and [AuditedRecorder] is told of a violation.
const (
	// ActionDenied is a change refused by the plugin's grant.
	ActionDenied = "denied"
	// ActionAudited is a change the plugin's grant does not allow, in
	// audit mode (policy.ActionAudit): logged, counted and applied.
	ActionAudited = "audited"
)

// grantFindings is what the check of a plugin's answer against its grant
// found (checkGrant); what they do is decided by the caller
// (enforceGrant, from checkAnswer).
type grantFindings struct {
	// grant is the grant the answer was checked against; nil for no
	// policy (then nothing was found).
	grant *policy.Grant
	// violations are the changes the grant does not allow.
	violations []policy.Violation
	// unchecked is the first container the answer updates or evicts
	// whose where could not be checked (a *WhereUncheckedError), or nil.
	unchecked error
}

// err returns the refusal the findings make of an answer of plugin
// (IDX-NAME) about s: a *policy.DeniedError with the grant's action if
// there are violations, else the unchecked target's error, else nil.
func (f grantFindings) err(plugin string, s subject) error {
	if len(f.violations) > 0 {
		return f.grant.Deny(plugin, s.pod, s.ctr, f.violations)
	}
	return f.unchecked
}

// checkGrant checks an answer about t's subject against the grant gs
// (nil: no policy) and returns what it found (policy.Grant.CheckAnswer:
// the adjustment of a container being created, and the updates and
// evictions of any answer; an answer that opts out carries no changes).
// It has no effect: the caller decides what the findings do.
func checkGrant(gs *grantState, t answerTargets, rsp proto.Message) grantFindings {
	if gs == nil {
		return grantFindings{}
	}
	f := grantFindings{grant: gs.grant}
	other := func(action, id string) (*api.PodSandbox, *api.Container) {
		pod, ctr, err := t.find(action, id)
		f.unchecked = cmp.Or(f.unchecked, err)
		return pod, ctr
	}
	f.violations = gs.grant.CheckAnswerTargets(t.s.pod, t.s.ctr, rsp, other)
	return f
}

// answerTargets is how checkGrant finds the containers an answer about s
// updates or evicts, for the check of its grant's where.
type answerTargets struct {
	s subject
	// ix is the where index if gs's where is not the one p's scope
	// records were made under (nil if it is not ready: then the
	// containers other than s's cannot be checked).
	ix       *whereIndex
	rechecks bool
	plugin   string
}

// answerTargets returns how to find the containers of an answer of p
// about s under gs.
func (p *plugin) answerTargets(gs *grantState, s subject) answerTargets {
	t := answerTargets{s: s, rechecks: gs.rechecks(), plugin: p.full}
	if t.rechecks {
		t.ix = p.a.readyWhereIndex()
	}
	return t
}

// find returns the pod and container of container id, which the answer
// updates or evicts (action): s's if it is s's container; else, if a
// reload changed the where, the where index's (a *WhereUncheckedError if
// it is not ready); else nils: the where is then checked by the plugin's
// scope records (checkTargets), which hold it.
func (t answerTargets) find(action, id string) (*api.PodSandbox, *api.Container, error) {
	if pod, ctr := t.s.target(id); ctr != nil || !t.rechecks {
		return pod, ctr, nil
	}
	return t.ix.lookup(t.plugin, action, id)
}

// target returns the pod and container of the event's subject if id is
// the subject's container, else nils.
func (s subject) target(id string) (*api.PodSandbox, *api.Container) {
	if s.ctr != nil && id == s.ctr.GetId() {
		return s.pod, s.ctr
	}
	return nil, nil
}

// countDenied counts the violations, refused or audited (action), in
// the denied metric: it tells the embedder's DeniedRecorder of the
// refused ones, its AuditedRecorder of the audited ones.
func (p *plugin) countDenied(vs []policy.Violation, action policy.Action) {
	m := p.a.metrics
	if m == nil || (m.denied == nil && m.audited == nil) {
		return
	}
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if p.pm.gone {
		return
	}
	for _, v := range vs {
		switch {
		case action != policy.ActionAudit && m.denied != nil:
			m.denied.RecordDenied(p.a.ctx, p.full, v.Field.String())
		case action == policy.ActionAudit && m.audited != nil:
			m.audited.RecordAudited(p.a.ctx, p.full, v.Field.String())
		}
	}
}

// targetLookup finds the pod and container of a container a plugin
// updates or evicts (action: "update", "evict") outside an event, for the
// check of its grant's where: nils if it does not know it, an error if it
// cannot be checked.
type targetLookup func(action, id string) (*api.PodSandbox, *api.Container, error)

// deniedUpdates separates the updates p may make under its grant from
// those it may not (each logged and counted), for the updates a plugin
// asks for outside an event: in its Synchronize answer (byID finds the
// containers of its snapshot) and in UpdateContainers (byID from
// whereLookup, or nil: where is checked through the plugin's scope
// records).
func (p *plugin) deniedUpdates(op string, updates []*api.ContainerUpdate, byID targetLookup) (allowed, denied []*api.ContainerUpdate) {
	g := p.currentGrant()
	if g == nil {
		return updates, nil
	}
	for _, u := range updates {
		err := p.checkTarget(g, byID, "update", u.GetContainerId(), func(pod *api.PodSandbox, ctr *api.Container) []policy.Violation {
			return g.CheckUpdate(pod, ctr, u)
		})
		switch {
		case err == nil:
			allowed = append(allowed, u)
		case g.Action() == policy.ActionAudit:
			allowed = append(allowed, u)
			p.log.Warn("plugin's update would be denied by the policy (audit)", "op", op, "error", err)
		default:
			denied = append(denied, u)
			p.log.Warn("plugin's update denied by the policy", "op", op, "error", err)
		}
	}
	return allowed, denied
}

// deniedEviction returns the refusal of the first eviction p may not ask
// for under its grant, else nil; it is logged and counted. byID finds the
// containers, if where is to be checked here (see whereLookup).
func (p *plugin) deniedEviction(evictions []*api.ContainerEviction, byID targetLookup) error {
	g := p.currentGrant()
	if g == nil {
		return nil
	}
	for _, ev := range evictions {
		err := p.checkTarget(g, byID, "evict", ev.GetContainerId(), func(pod *api.PodSandbox, ctr *api.Container) []policy.Violation {
			return g.CheckEviction(pod, ctr, ev)
		})
		switch {
		case err == nil:
		case g.Action() == policy.ActionAudit:
			p.log.Warn("plugin's eviction would be denied by the policy (audit)", "error", err)
		default:
			p.log.Warn("plugin's eviction denied by the policy", "error", err)
			return err
		}
	}
	return nil
}

// checkTarget checks p's update or eviction (action) of container id
// outside an event under g: the violations check returns for the
// container byID finds (nil byID: none), counted, as a
// *policy.DeniedError, or byID's error.
func (p *plugin) checkTarget(g *policy.Grant, byID targetLookup, action, id string,
	check func(*api.PodSandbox, *api.Container) []policy.Violation) error {
	var (
		pod *api.PodSandbox
		ctr *api.Container
		err error
	)
	if byID != nil {
		pod, ctr, err = byID(action, id)
	}
	if vs := check(pod, ctr); len(vs) > 0 {
		derr := &policy.DeniedError{Plugin: p.full, Target: "container " + id, Violations: vs, Action: g.Action()}
		p.countDenied(vs, derr.Action)
		return derr
	}
	return err
}

// whereLookup returns how to find the containers p updates or evicts in
// UpdateContainers, if p's grant's where is not the one its scope
// records were made under (a reload changed it): in the where index,
// built now if it is missing, so that they are checked against the where
// in force at once rather than once p reconnects. Otherwise it returns
// nil: the records hold the where. A failure to list the runtime's
// containers is returned (the request is refused: the where cannot be
// checked).
func (p *plugin) whereLookup() (targetLookup, error) {
	if !p.grant.Load().rechecks() {
		return nil, nil
	}
	ix, err := p.a.readyIndex()
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's containers to check the where of plugin %s, changed by a policy reload: %w", p.full, err)
	}
	return func(action, id string) (*api.PodSandbox, *api.Container, error) {
		return ix.lookup(p.full, action, id)
	}, nil
}

// snapshotLookup finds a container of a Synchronize snapshot, and its
// pod, by ID (nils if it is not there); its indexes are built once, at
// the first lookup.
func snapshotLookup(pods []*api.PodSandbox, ctrs []*api.Container) targetLookup {
	var (
		podByID map[string]*api.PodSandbox
		ctrByID map[string]*api.Container
	)
	return func(_, id string) (*api.PodSandbox, *api.Container, error) {
		if ctrByID == nil {
			podByID = make(map[string]*api.PodSandbox, len(pods))
			for _, pod := range pods {
				podByID[pod.GetId()] = pod
			}
			ctrByID = make(map[string]*api.Container, len(ctrs))
			for _, c := range ctrs {
				ctrByID[c.GetId()] = c
			}
		}
		c := ctrByID[id]
		if c == nil {
			return nil, nil, nil
		}
		return podByID[c.GetPodSandboxId()], c, nil
	}
}
