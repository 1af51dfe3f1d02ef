package core

import (
	"fmt"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/handler"
)

// A plugin's scope is sent to the runtime, and nrikit's runtime then
// sends only the events about pods and containers in it (docs/scope.md).
// Other runtimes (containerd, CRI-O) send every event; on a connection to
// one of them the session enforces the scope itself, with the runtime's
// semantics, in a gate: every event request passes through it before the
// plugin's handler.
//
// A runtime confirms that it evaluates scopes by advertising its events
// (ConfigureRequest.supported_events, a nrikit extension sent by every
// nrikit runtime, which evaluates scopes; upstream's never send it).

// Matcher is a compiled scope; *filter.Filter is one. The front ends
// compile the scope (the stub with CEL if the plugin asks for it, a WASM
// guest without), so that this package does not link the filter.
type Matcher interface {
	// MatchPod reports whether pod is in scope.
	MatchPod(pod *api.PodSandbox) bool
	// MatchContainer reports whether ctr, of pod (nil if unknown), is in
	// scope.
	MatchContainer(pod *api.PodSandbox, ctr *api.Container) bool
	// MatchesAll reports whether everything is in scope.
	MatchesAll() bool
	// String describes the scope, for messages.
	String() string
}

// containerFollowUps are the container events after CreateContainer that
// a scope decided at creation applies to. (ValidateContainerAdjustment
// carries the container as first requested, so its own evaluation is the
// creation's decision.)
var containerFollowUps = api.ContainerEvents &^ api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)

// trackedEvents are the events a gate that tracks containers needs to
// see, whether or not the plugin handles them.
var trackedEvents = api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER)

// runtimeFiltersScopes reports whether the runtime that sent req
// evaluates plugin scopes.
func runtimeFiltersScopes(req *api.ConfigureRequest) bool {
	return req.GetSupportedEvents() != 0
}

// gateFor returns the gate for a connection configured by req with the
// subscription sub, and the events to add to the subscription for it; nil
// if the plugin has no scope or the runtime evaluates it.
func (p *Plugin) gateFor(req *api.ConfigureRequest, sub api.EventMask) (*gate, api.EventMask, error) {
	if p.cfg.Scope == nil || runtimeFiltersScopes(req) {
		return nil, 0, nil
	}
	if p.cfg.ScopeErr != nil || p.cfg.Matcher == nil {
		err := p.cfg.ScopeErr
		if err == nil {
			err = fmt.Errorf("stub: WithScope: the scope was not compiled")
		}
		return nil, 0, fmt.Errorf("%w; the runtime does not evaluate scopes, so the plugin must", err)
	}
	if p.cfg.Matcher.MatchesAll() {
		return nil, 0, nil
	}
	g := &gate{m: p.cfg.Matcher}
	var extra api.EventMask
	if p.mutable && sub&containerFollowUps != 0 {
		g.track, g.ctrs = true, map[string]string{}
		extra = trackedEvents &^ sub
	}
	return g, extra, nil
}

// gate enforces a plugin's scope on the plugin's side of one connection,
// with the semantics of nrikit's runtime (docs/scope.md):
//
//   - A pod event is delivered if the pod is in scope. (Pod-level
//     criteria look at what a pod's events all carry unchanged, so this is
//     the decision taken when the pod was created.)
//   - CreateContainer and ValidateContainerAdjustment are delivered if
//     the container and its pod are in scope.
//   - The other container events are delivered if the container was in
//     scope when it was created or synchronized. For a scope that can
//     only see what does not change, the container's own view in the
//     event decides the same; otherwise (container annotations, CEL) the
//     gate remembers the containers in scope from Synchronize and
//     CreateContainer until RemoveContainer (the plugin subscribes to both
//     for it).
//   - Synchronize hands the handler the pods and containers in scope.
//
// An event out of scope is answered as the runtime would have if it had
// not sent it: without changes, opting out of the object for
// RunPodSandbox and CreateContainer (of the pod, if the pod is out of
// scope). A CEL expression that fails to evaluate does not match.
type gate struct {
	m     Matcher
	track bool

	mu sync.Mutex
	// ctrs holds the containers in scope (ID → pod ID) when tracking.
	ctrs map[string]string
}

// admit decides whether the handler of event e about pod (and ctr, for a
// container event) is called: nil if so, else the opt-out sentinel the
// session answers the event with (ignored by events without opt-out).
// A nil gate admits everything.
func (g *gate) admit(e api.Event, pod *api.PodSandbox, ctr *api.Container) error {
	switch {
	case g == nil:
		return nil
	case !api.ContainerEvents.IsSet(e):
		if e == api.Event_REMOVE_POD_SANDBOX {
			g.forgetPod(pod.GetId())
		}
		if !g.m.MatchPod(pod) {
			return handler.ErrNotInterestedInPod
		}
		return nil
	case e == api.Event_CREATE_CONTAINER, e == api.Event_VALIDATE_CONTAINER_ADJUSTMENT, !g.track:
		if !g.m.MatchContainer(pod, ctr) {
			if !g.m.MatchPod(pod) {
				return handler.ErrNotInterestedInPod
			}
			return handler.ErrNotInterestedInContainer
		}
		if e == api.Event_CREATE_CONTAINER && g.track {
			g.mu.Lock()
			g.ctrs[ctr.GetId()] = podID(pod, ctr)
			g.mu.Unlock()
		}
		return nil
	}
	g.mu.Lock()
	_, seen := g.ctrs[ctr.GetId()]
	if e == api.Event_REMOVE_CONTAINER {
		delete(g.ctrs, ctr.GetId())
	}
	g.mu.Unlock()
	if !seen {
		return handler.ErrNotInterestedInContainer
	}
	return nil
}

// podID is the ID of the pod of a container event.
func podID(pod *api.PodSandbox, ctr *api.Container) string {
	if id := pod.GetId(); id != "" {
		return id
	}
	return ctr.GetPodSandboxId()
}

// forgetPod forgets the containers of a removed pod (normally none are
// left: containers are removed first).
func (g *gate) forgetPod(id string) {
	if !g.track {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for cid, pid := range g.ctrs {
		if pid == id {
			delete(g.ctrs, cid)
		}
	}
}

// seed returns the pods and containers of a Synchronize snapshot that are
// in scope, remembering the containers when tracking. A nil gate returns
// them all.
func (g *gate) seed(pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.PodSandbox, []*api.Container) {
	if g == nil {
		return pods, ctrs
	}
	inPods, inCtrs := inScope(pods, ctrs, g.m)
	if g.track {
		g.mu.Lock()
		clear(g.ctrs)
		for _, c := range inCtrs {
			g.ctrs[c.GetId()] = c.GetPodSandboxId()
		}
		g.mu.Unlock()
	}
	return inPods, inCtrs
}

// inScope returns the pods and containers of a Synchronize snapshot that
// m admits: the pods it accepts, and the containers it accepts with their
// pod (nil if the snapshot lacks it).
func inScope(pods []*api.PodSandbox, ctrs []*api.Container, m Matcher) ([]*api.PodSandbox, []*api.Container) {
	byID := make(map[string]*api.PodSandbox, len(pods))
	var inPods []*api.PodSandbox
	for _, p := range pods {
		byID[p.GetId()] = p
		if m.MatchPod(p) {
			inPods = append(inPods, p)
		}
	}
	var inCtrs []*api.Container
	for _, c := range ctrs {
		if m.MatchContainer(byID[c.GetPodSandboxId()], c) {
			inCtrs = append(inCtrs, c)
		}
	}
	return inPods, inCtrs
}
