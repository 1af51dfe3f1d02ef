package adaptation

import (
	"strings"

	"github.com/nrikit/nrikit/api"
)

// The plugin's side of scopes and opt-outs: counting skipped events,
// taking opt-outs from answers, and keeping a plugin's changes within its
// scope.

// skipped counts an event not delivered to p for reason v.
func (p *plugin) skipped(e api.Event, v verdict) {
	if v == optedOut {
		p.optedOut.Add(1)
	} else {
		p.filtered.Add(1)
	}
	p.countSkipped(e, v)
}

// optOuter is an answer that can carry an opt-out.
type optOuter interface{ GetOptOut() *api.OptOut }

// hasOptOut reports whether an answer opts out of anything.
func hasOptOut(o *api.OptOut) bool { return len(o.GetPodIds()) > 0 || len(o.GetContainerIds()) > 0 }

// takeOptOut records the opt-out in p's answer rsp to event e about s, if
// any: an answer may opt out of the event's pod and, for CreateContainer,
// of the event's container; other IDs are ignored with a warning. It runs
// on p's worker, before the next event for p starts.
func (p *plugin) takeOptOut(e api.Event, s subject, rsp any) {
	oo, ok := rsp.(optOuter)
	if !ok || !hasOptOut(oo.GetOptOut()) {
		return
	}
	out := oo.GetOptOut()
	podID, ctrID := s.podID(), s.ctrID()
	var (
		pods    []string
		ctrs    map[string]string
		ignored idSample
	)
	for _, id := range out.GetPodIds() {
		if id == podID && id != "" {
			pods = append(pods, id)
		} else {
			ignored.add("pod " + id)
		}
	}
	for _, id := range out.GetContainerIds() {
		if id == ctrID && id != "" && isContainerEvent(e) {
			ctrs = map[string]string{id: podID}
		} else {
			ignored.add("container " + id)
		}
	}
	if ignored.n > 0 {
		p.log.Warn("plugin opted out of objects its answer is not about, ignoring them",
			"event", e.Name(), "count", ignored.n, "ignored", ignored.String())
	}
	if len(pods) == 0 && len(ctrs) == 0 {
		return
	}
	p.track.optOut(pods, ctrs)
	p.log.Debug("plugin opted out", "event", e.Name(), "pods", strings.Join(pods, ","), "containers", ctrID)
}

// takeSyncOptOut records the opt-out in p's Synchronize answer: of pods
// and containers it was sent. It runs on p's worker, after the plugin
// answered the last part and before any other event.
func (p *plugin) takeSyncOptOut(out *api.OptOut, pods []*api.PodSandbox, ctrs []*api.Container) {
	if !hasOptOut(out) {
		return
	}
	sentPods := make(map[string]bool, len(pods))
	for _, pod := range pods {
		sentPods[pod.GetId()] = true
	}
	sentCtrs := make(map[string]string, len(ctrs))
	for _, c := range ctrs {
		sentCtrs[c.GetId()] = c.GetPodSandboxId()
	}
	var (
		podIDs  []string
		ctrIDs  = map[string]string{}
		ignored idSample
	)
	for _, id := range out.GetPodIds() {
		if sentPods[id] {
			podIDs = append(podIDs, id)
		} else {
			ignored.add("pod " + id)
		}
	}
	for _, id := range out.GetContainerIds() {
		if pod, ok := sentCtrs[id]; ok {
			ctrIDs[id] = pod
		} else {
			ignored.add("container " + id)
		}
	}
	if ignored.n > 0 {
		p.log.Warn("plugin opted out of objects it was not sent in Synchronize, ignoring them",
			"count", ignored.n, "ignored", ignored.String())
	}
	p.track.optOut(podIDs, ctrIDs)
	p.a.log.Info("plugin opted out in Synchronize", "plugin", p.full, "pods", len(podIDs), "containers", len(ctrIDs))
}

// updater and evicter are answers that can update or evict containers.
type (
	updater interface{ GetUpdate() []*api.ContainerUpdate }
	evicter interface {
		GetEvict() []*api.ContainerEviction
	}
)

// checkTargets refuses an answer of p to e that updates or evicts a
// container outside p's scope, with a *PluginError wrapping a
// *ScopeError. An answer that opts out carries no changes (they are
// ignored, see CreateContainer): it is not checked.
func (p *plugin) checkTargets(e api.Event, rsp any) error {
	if p.track.f == nil {
		return nil
	}
	if oo, ok := rsp.(optOuter); ok && hasOptOut(oo.GetOptOut()) {
		return nil
	}
	if u, ok := rsp.(updater); ok {
		for _, u := range u.GetUpdate() {
			if id := u.GetContainerId(); !p.track.inScope(id) {
				return &PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureRejected,
					Err: &ScopeError{Plugin: p.full, Action: "update", Container: id}}
			}
		}
	}
	if ev, ok := rsp.(evicter); ok {
		for _, ev := range ev.GetEvict() {
			if id := ev.GetContainerId(); !p.track.inScope(id) {
				return &PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureRejected,
					Err: &ScopeError{Plugin: p.full, Action: "evict", Container: id}}
			}
		}
	}
	return nil
}

// splitUpdates separates the updates p may make (in its scope; none if
// it only observes) from the ones it may not, which it logs in one
// record.
func (p *plugin) splitUpdates(updates []*api.ContainerUpdate) (allowed, refused []*api.ContainerUpdate) {
	if refused, ok := p.refuseObserverUpdates(updates); ok {
		return nil, refused
	}
	if p.track.f == nil {
		return updates, nil
	}
	var ids idSample
	for _, u := range updates {
		if p.track.inScope(u.GetContainerId()) {
			allowed = append(allowed, u)
			continue
		}
		refused = append(refused, u)
		ids.add(u.GetContainerId())
	}
	if ids.n > 0 {
		p.log.Warn("refusing plugin's updates of containers outside its scope", "refused", ids.n, "containers", ids.String())
	}
	return allowed, refused
}

// refusedEviction returns a *ScopeError for the first eviction p may not
// ask for, else nil.
func (p *plugin) refusedEviction(evictions []*api.ContainerEviction) *ScopeError {
	if p.track.f == nil {
		return nil
	}
	for _, ev := range evictions {
		if !p.track.inScope(ev.GetContainerId()) {
			return &ScopeError{Plugin: p.full, Action: "evict", Container: ev.GetContainerId()}
		}
	}
	return nil
}

// scopeMessage is a scope compilation error without the filter
// package's prefix ("pod_label_selector: ...").
func scopeMessage(err error) string { return strings.TrimPrefix(err.Error(), "filter: ") }
