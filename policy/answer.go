package policy

import "github.com/nrikit/nrikit/api"

// The parts of plugins' answers that carry changes.
type (
	adjuster interface {
		GetAdjust() *api.ContainerAdjustment
	}
	updater interface {
		GetUpdate() []*api.ContainerUpdate
	}
	evicter interface {
		GetEvict() []*api.ContainerEviction
	}
	optOuter interface{ GetOptOut() *api.OptOut }
)

// CheckAnswer returns the changes of rsp, a plugin's answer to an event
// about ctr (nil for a pod event) of pod, that the grant does not allow,
// as a runtime checks an answer before it uses it: the adjustment of the
// container being created (CheckAdjustment), and the updates and
// evictions of any answer (CheckUpdate, CheckEviction; those of another
// container than ctr with a nil pod and container: the runtime checks
// their Where through its own records of the plugin's scope). An answer
// that opts out of a pod or container carries no changes and is not
// checked. The nil grant allows everything.
func (g *Grant) CheckAnswer(pod *api.PodSandbox, ctr *api.Container, rsp any) []Violation {
	return g.CheckAnswerTargets(pod, ctr, rsp, nil)
}

// TargetFunc finds the pod and container of container id, which a
// plugin's answer updates or evicts (action: "update" or "evict"); nils
// if the caller checks its Where otherwise.
type TargetFunc func(action, id string) (*api.PodSandbox, *api.Container)

// CheckAnswerTargets is CheckAnswer with the pod and container of each
// update's and eviction's target other than ctr found by other (nil: not
// found), so that their Where is checked too.
func (g *Grant) CheckAnswerTargets(pod *api.PodSandbox, ctr *api.Container, rsp any, other TargetFunc) []Violation {
	if g == nil {
		return nil
	}
	if oo, ok := rsp.(optOuter); ok && (len(oo.GetOptOut().GetPodIds()) > 0 || len(oo.GetOptOut().GetContainerIds()) > 0) {
		return nil
	}
	target := func(action, id string) (*api.PodSandbox, *api.Container) {
		switch {
		case ctr != nil && id == ctr.GetId():
			return pod, ctr
		case other != nil:
			return other(action, id)
		}
		return nil, nil
	}
	var vs []Violation
	if a, ok := rsp.(adjuster); ok {
		vs = g.CheckAdjustment(pod, ctr, a.GetAdjust())
	}
	if u, ok := rsp.(updater); ok {
		for _, u := range u.GetUpdate() {
			p, c := target("update", u.GetContainerId())
			vs = append(vs, g.CheckUpdate(p, c, u)...)
		}
	}
	if e, ok := rsp.(evicter); ok {
		for _, e := range e.GetEvict() {
			p, c := target("evict", e.GetContainerId())
			vs = append(vs, g.CheckEviction(p, c, e)...)
		}
	}
	return vs
}
