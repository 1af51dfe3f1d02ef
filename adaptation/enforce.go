package adaptation

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/protobuf/proto"
)

// Enforcement of the plugins' grants (docs/policy.md, "What a refusal
// does"): each plugin's own answer is checked against its grant before
// the dispatcher takes it in (checkGrant, from checkAnswer), and so are
// the updates of its Synchronize answer (deniedUpdates) and its
// unsolicited UpdateContainers (see updateContainers).

// DeniedRecorder is an optional interface of a [MetricsRecorder]: a
// recorder that implements it is told of every change a plugin's grant
// does not allow, by plugin (IDX-NAME), field (a [policy.Capability]'s
// stable name, one of a fixed set) and action ([ActionDenied] if it was
// refused, [ActionAudited] if its grant is in audit mode and it was
// applied), as the nri_plugin_denied_total metric counts them; if it
// implements [RequestRecorder] too, not after it was told to forget the
// plugin.
type DeniedRecorder interface {
	RecordDenied(ctx context.Context, plugin, field, action string)
}

// The actions of [DeniedRecorder.RecordDenied], the values of the action
// label of [MetricDenied].
const (
	// ActionDenied is a change refused by the plugin's grant.
	ActionDenied = "denied"
	// ActionAudited is a change the plugin's grant does not allow, in
	// audit mode (policy.ActionAudit): logged, counted and applied.
	ActionAudited = "audited"
)

// actionLabel is the metric's action of a grant's.
func actionLabel(a policy.Action) string {
	if a == policy.ActionAudit {
		return ActionAudited
	}
	return ActionDenied
}

// checkGrant refuses an answer of p to e about s that makes changes p's
// grant does not allow (policy.Grant.CheckAnswer: the adjustment of a
// container being created, and the updates and evictions of any answer;
// an answer that opts out carries no changes). The refusal is p's
// failure of the request (FailureDenied), under its failure policy. A
// grant in audit mode refuses nothing: the violations are logged and
// counted (audited), and the answer is used.
func (p *plugin) checkGrant(e api.Event, s subject, rsp proto.Message) error {
	g := p.currentGrant()
	if g == nil {
		return nil
	}
	vs := g.CheckAnswer(s.pod, s.ctr, rsp)
	if len(vs) == 0 {
		return nil
	}
	err := g.Deny(p.full, s.pod, s.ctr, vs)
	p.countDenied(vs, err.Action)
	if err.Action == policy.ActionAudit {
		p.log.Warn("plugin's changes would be denied by the policy (audit)", "event", e.Name(), "error", err)
		return nil
	}
	return p.fail(&PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureDenied, Err: err})
}

// countDenied counts the violations, refused or audited (action), in
// the denied metric and tells the embedder's DeniedRecorder.
func (p *plugin) countDenied(vs []policy.Violation, action policy.Action) {
	if p.a.metrics == nil || p.a.metrics.denied == nil {
		return
	}
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if p.pm.gone {
		return
	}
	for _, v := range vs {
		p.a.metrics.denied.RecordDenied(p.a.ctx, p.full, v.Field.String(), actionLabel(action))
	}
}

// deniedUpdates separates the updates p may make under its grant from
// those it may not (each logged and counted), for the updates a plugin
// asks for outside an event: in its Synchronize answer (byID finds the
// containers of its snapshot) and in UpdateContainers (byID nil: where
// is checked through the plugin's scope records).
func (p *plugin) deniedUpdates(op string, updates []*api.ContainerUpdate, byID func(string) (*api.PodSandbox, *api.Container)) (allowed, denied []*api.ContainerUpdate) {
	g := p.currentGrant()
	if g == nil {
		return updates, nil
	}
	for _, u := range updates {
		var (
			pod *api.PodSandbox
			ctr *api.Container
		)
		if byID != nil {
			pod, ctr = byID(u.GetContainerId())
		}
		vs := g.CheckUpdate(pod, ctr, u)
		if len(vs) == 0 {
			allowed = append(allowed, u)
			continue
		}
		err := &policy.DeniedError{Plugin: p.full, Target: "container " + u.GetContainerId(), Violations: vs, Action: g.Action()}
		p.countDenied(vs, err.Action)
		if err.Action == policy.ActionAudit {
			allowed = append(allowed, u)
			p.log.Warn("plugin's update would be denied by the policy (audit)", "op", op, "error", err)
			continue
		}
		denied = append(denied, u)
		p.log.Warn("plugin's update denied by the policy", "op", op, "error", err)
	}
	return allowed, denied
}

// deniedEviction returns the refusal of the first eviction p may not ask
// for under its grant, else nil; it is logged and counted. byID finds the
// containers, if where is to be checked here (see whereLookup).
func (p *plugin) deniedEviction(evictions []*api.ContainerEviction, byID func(string) (*api.PodSandbox, *api.Container)) error {
	g := p.currentGrant()
	if g == nil {
		return nil
	}
	for _, ev := range evictions {
		var (
			pod *api.PodSandbox
			ctr *api.Container
		)
		if byID != nil {
			pod, ctr = byID(ev.GetContainerId())
		}
		if vs := g.CheckEviction(pod, ctr, ev); len(vs) > 0 {
			err := &policy.DeniedError{Plugin: p.full, Target: "container " + ev.GetContainerId(), Violations: vs, Action: g.Action()}
			p.countDenied(vs, err.Action)
			if err.Action == policy.ActionAudit {
				p.log.Warn("plugin's eviction would be denied by the policy (audit)", "error", err)
				continue
			}
			p.log.Warn("plugin's eviction denied by the policy", "error", err)
			return err
		}
	}
	return nil
}

// whereLookup returns a lookup of the runtime's pods and containers by
// container ID, listed now, if p's grant's where is not the one its scope
// records were made under (a reload changed it): p's own updates and
// evictions (UpdateContainers) are then checked against the where in
// force with it, at once rather than once p reconnects. Otherwise it
// returns nil: the records hold the where. The list is the runtime's
// ListFunc, or its SyncFunc, which takes the runtime's lock as its
// UpdateFunc does; a failure to list is returned (the request is refused:
// the where cannot be checked).
func (p *plugin) whereLookup() (func(string) (*api.PodSandbox, *api.Container), error) {
	if gs := p.grant.Load(); gs == nil || !gs.recheck || gs.where == nil {
		return nil, nil
	}
	var lookup func(string) (*api.PodSandbox, *api.Container)
	err := p.a.withSnapshot(p, func(pods []*api.PodSandbox, ctrs []*api.Container) error {
		lookup = snapshotLookup(pods, ctrs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the runtime's containers to check the where of plugin %s, changed by a policy reload: %w", p.full, err)
	}
	return lookup, nil
}

// snapshotLookup finds a container of a Synchronize snapshot, and its
// pod, by ID (nils if it is not there); its indexes are built once, at
// the first lookup.
func snapshotLookup(pods []*api.PodSandbox, ctrs []*api.Container) func(string) (*api.PodSandbox, *api.Container) {
	var (
		podByID map[string]*api.PodSandbox
		ctrByID map[string]*api.Container
	)
	return func(id string) (*api.PodSandbox, *api.Container) {
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
			return nil, nil
		}
		return podByID[c.GetPodSandboxId()], c
	}
}
