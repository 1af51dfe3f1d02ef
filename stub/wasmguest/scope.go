package wasmguest

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// gate enforces a plugin's scope in the guest, on a runtime that does
// not evaluate scopes (one that does not advertise its events in
// ConfigureRequest.supported_events, such as upstream's). A nil gate
// admits everything.
//
// Unlike the stub's gate it does not remember which containers were in
// scope at creation: every event is judged by the pod and container it
// carries. For scopes on what does not change (namespaces, labels, pod
// annotations, runtime handlers, names, images) the decision is the same;
// for container annotations, which plugins can change, a container's
// later events are judged by their own view of it.
//
// The gate holds the filter's methods, not the filter: only newGate
// refers to package filter, and only WithScope to newGate, so that a
// module whose plugin has no scope does not link the filter and the
// regular expressions behind it (about 0.6 MB of a Go guest).
type gate struct {
	pod       func(*api.PodSandbox) bool
	container func(*api.PodSandbox, *api.Container) bool
}

// newGate returns the gate for scope on the runtime that sent req, or nil
// if there is nothing to enforce.
func newGate(scope *api.PluginScope, req *api.ConfigureRequest) (*gate, error) {
	if scope == nil || req.GetSupportedEvents() != 0 {
		return nil, nil
	}
	if strings.TrimSpace(scope.GetCel()) != "" {
		return nil, fmt.Errorf("wasmguest: WithScope: the runtime does not evaluate scopes and the guest cannot evaluate CEL expressions")
	}
	f, err := filter.Compile(scope)
	if err != nil {
		return nil, fmt.Errorf("wasmguest: WithScope: %w; the runtime does not evaluate scopes, so the plugin must", err)
	}
	if f.MatchesAll() {
		return nil, nil
	}
	return &gate{pod: f.MatchPod, container: f.MatchContainer}, nil
}

// admitPod reports whether a pod event's handler is called.
func (g *gate) admitPod(pod *api.PodSandbox) bool {
	return g == nil || g.pod(pod)
}

// admitContainer reports whether a container event's handler is called.
func (g *gate) admitContainer(pod *api.PodSandbox, ctr *api.Container) bool {
	return g == nil || g.container(pod, ctr)
}

// optOut is the opt-out a CreateContainer out of scope is answered with:
// of the pod if the pod is out of scope, else of the container.
func (g *gate) optOut(pod *api.PodSandbox, ctr *api.Container) *api.OptOut {
	if !g.pod(pod) {
		return &api.OptOut{PodIds: []string{pod.GetId()}}
	}
	return &api.OptOut{ContainerIds: []string{ctr.GetId()}}
}

// seed returns the pods and containers of a Synchronize snapshot in scope.
func (g *gate) seed(pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.PodSandbox, []*api.Container) {
	if g == nil {
		return pods, ctrs
	}
	return handlers.InScope(pods, ctrs, g.pod, g.container)
}
