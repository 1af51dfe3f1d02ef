package stub

import (
	"fmt"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	phandlers "github.com/nrikit/nrikit/stub/internal/handlers"
)

// A plugin's scope (WithScope) is sent to the runtime, and nrikit's
// runtime then sends only the events about pods and containers in it
// (docs/scope.md). Other runtimes (containerd, CRI-O) send every event;
// on a connection to one of them the stub enforces the scope itself, with
// the runtime's semantics, in scopeGate: every event request passes
// through it before the plugin's handler.
//
// A runtime confirms that it evaluates scopes by advertising its events
// (ConfigureRequest.supported_events, a nrikit extension sent by every
// nrikit runtime, which evaluates scopes; upstream's never send it).

// containerFollowUps are the container events after CreateContainer that
// a scope decided at creation applies to. (ValidateContainerAdjustment
// carries the container as first requested, so its own filter evaluation
// is the creation's decision.)
var containerFollowUps = api.ContainerEvents &^ api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)

// trackedEvents are the events a gate that tracks containers needs to
// see, whether or not the plugin handles them.
var trackedEvents = api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER)

// WithCEL lets the stub evaluate a scope's CEL expression itself, on
// runtimes that do not evaluate scopes (see [WithScope]); pass
// celscope.Compile (package github.com/nrikit/nrikit/filter/celscope).
// CEL is an option because its implementation adds several megabytes to
// a plugin binary: a plugin whose scope has no CEL expression does not
// need it, and one whose scope has one and runs only on nrikit's runtime,
// which evaluates the expression, does not either.
func WithCEL(compile filter.CELCompiler) Option {
	return func(c *config) error {
		if compile == nil {
			return fmt.Errorf("stub: WithCEL: nil compiler")
		}
		c.cel = compile
		return nil
	}
}

// plannedScope is a compiled WithScope.
type plannedScope struct {
	f *filter.Filter
	// err is why the scope did not compile: the stub reports it when it
	// has to enforce the scope, a runtime that evaluates scopes when it
	// receives it.
	err error
	// mutable: the scope looks at container fields that plugins can
	// change (annotations; anything, from CEL), so a container's
	// later events are not judged by their own view of it.
	mutable bool
}

// planScope compiles the scope of cfg, if any.
func planScope(cfg *config) plannedScope {
	if cfg.scope == nil {
		return plannedScope{}
	}
	opts := []filter.Option{filter.WithLogger(cfg.logger)}
	if cfg.cel != nil {
		opts = append(opts, filter.WithCEL(cfg.cel))
	}
	f, err := filter.Compile(cfg.scope, opts...)
	if err != nil {
		err = fmt.Errorf("stub: WithScope: %w", err)
	}
	return plannedScope{
		f:       f,
		err:     err,
		mutable: len(cfg.scope.GetContainerAnnotations()) > 0 || strings.TrimSpace(cfg.scope.GetCel()) != "",
	}
}

// runtimeFiltersScopes reports whether the runtime that sent req
// evaluates plugin scopes.
func runtimeFiltersScopes(req *api.ConfigureRequest) bool {
	return req.GetSupportedEvents() != 0
}

// gateFor returns the gate for a connection configured by req with the
// subscription sub, and the events to add to the subscription for it; nil
// if the plugin has no scope or the runtime evaluates it.
func (c *core) gateFor(req *api.ConfigureRequest, sub api.EventMask) (*scopeGate, api.EventMask, error) {
	sc := c.scope
	if c.cfg.scope == nil || runtimeFiltersScopes(req) {
		return nil, 0, nil
	}
	if sc.err != nil {
		return nil, 0, fmt.Errorf("%w; the runtime does not evaluate scopes, so the plugin must", sc.err)
	}
	if sc.f.MatchesAll() {
		return nil, 0, nil
	}
	g := &scopeGate{f: sc.f}
	var extra api.EventMask
	if sc.mutable && sub&containerFollowUps != 0 {
		g.track, g.ctrs = true, map[string]string{}
		extra = trackedEvents &^ sub
	}
	return g, extra, nil
}

// scopeGate enforces a plugin's scope on the plugin's side of one
// connection, with the semantics of nrikit's runtime (docs/scope.md):
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
//     CreateContainer until RemoveContainer (the stub subscribes to both
//     for it).
//   - Synchronize hands the handler the pods and containers in scope.
//
// An event out of scope is answered as the runtime would have if it had
// not sent it: without changes, opting out of the object for
// RunPodSandbox and CreateContainer (of the pod, if the pod is out of
// scope). A CEL expression that fails to evaluate does not match.
type scopeGate struct {
	f     *filter.Filter
	track bool

	mu sync.Mutex
	// ctrs holds the containers in scope (ID → pod ID) when tracking.
	ctrs map[string]string
}

// admit decides whether the handler of event e about pod (and ctr, for a
// container event) is called: nil if so, else the opt-out sentinel the
// dispatcher answers the event with (ignored by events without opt-out).
// A nil gate admits everything.
func (g *scopeGate) admit(e api.Event, pod *api.PodSandbox, ctr *api.Container) error {
	switch {
	case g == nil:
		return nil
	case !api.ContainerEvents.IsSet(e):
		if e == api.Event_REMOVE_POD_SANDBOX {
			g.forgetPod(pod.GetId())
		}
		if !g.f.MatchPod(pod) {
			return ErrNotInterestedInPod
		}
		return nil
	case e == api.Event_CREATE_CONTAINER, e == api.Event_VALIDATE_CONTAINER_ADJUSTMENT, !g.track:
		if !g.f.MatchContainer(pod, ctr) {
			if !g.f.MatchPod(pod) {
				return ErrNotInterestedInPod
			}
			return ErrNotInterestedInContainer
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
		return ErrNotInterestedInContainer
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
func (g *scopeGate) forgetPod(id string) {
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
func (g *scopeGate) seed(pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.PodSandbox, []*api.Container) {
	if g == nil {
		return pods, ctrs
	}
	inPods, inCtrs := phandlers.InScope(pods, ctrs, g.f.MatchPod, g.f.MatchContainer)
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
