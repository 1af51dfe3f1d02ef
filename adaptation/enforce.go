package adaptation

import (
	"context"

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
// refused, by plugin (IDX-NAME) and field (a [policy.Capability]'s stable
// name, one of a fixed set), as the nri_plugin_denied_total metric
// counts them; if it implements [RequestRecorder] too, not after it was
// told to forget the plugin.
type DeniedRecorder interface {
	RecordDenied(ctx context.Context, plugin, field string)
}

// checkGrant refuses an answer of p to e about s that makes changes p's
// grant does not allow (policy.Grant.CheckAnswer: the adjustment of a
// container being created, and the updates and evictions of any answer;
// an answer that opts out carries no changes). The refusal is p's
// failure of the request (FailureDenied), under its failure policy.
func (p *plugin) checkGrant(e api.Event, s subject, rsp proto.Message) error {
	g := p.currentGrant()
	if g == nil {
		return nil
	}
	vs := g.CheckAnswer(s.pod, s.ctr, rsp)
	if len(vs) == 0 {
		return nil
	}
	err := policy.Deny(p.full, s.pod, s.ctr, vs)
	p.countDenied(vs)
	return p.fail(&PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureDenied, Err: err})
}

// countDenied counts the violations in the denied metric and tells the
// embedder's DeniedRecorder.
func (p *plugin) countDenied(vs []policy.Violation) {
	if p.a.metrics == nil || p.a.metrics.denied == nil {
		return
	}
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if p.pm.gone {
		return
	}
	for _, v := range vs {
		p.a.metrics.denied.RecordDenied(p.a.ctx, p.full, v.Field.String())
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
		denied = append(denied, u)
		p.countDenied(vs)
		p.log.Warn("plugin's update denied by the policy", "op", op,
			"error", &policy.DeniedError{Plugin: p.full, Target: "container " + u.GetContainerId(), Violations: vs})
	}
	return allowed, denied
}

// deniedEviction returns the refusal of the first eviction p may not ask
// for under its grant, else nil; it is logged and counted.
func (p *plugin) deniedEviction(evictions []*api.ContainerEviction) error {
	g := p.currentGrant()
	if g == nil {
		return nil
	}
	for _, ev := range evictions {
		if vs := g.CheckEviction(nil, nil, ev); len(vs) > 0 {
			p.countDenied(vs)
			err := &policy.DeniedError{Plugin: p.full, Target: "container " + ev.GetContainerId(), Violations: vs}
			p.log.Warn("plugin's eviction denied by the policy", "error", err)
			return err
		}
	}
	return nil
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
