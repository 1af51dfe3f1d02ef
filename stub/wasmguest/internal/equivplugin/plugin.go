// Package equivplugin is the plugin of the process-versus-WASM
// equivalence test (stub/wasmguest/equivalence_test.go): the test runs it
// as a stub process and, built by testdata/equivguest, as a WASM guest,
// and compares every answer. Its answers show what it was told before:
// each handler call is noted, and the answers with content carry the
// notes, so a call that one side made and the other did not shows up in
// the next answer.
package equivplugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/handler"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

// The options both sides are built with.
var (
	// Scope admits the containers annotated AnnotationKey of the pods of
	// namespaces team-*: a scope that can change its mind about a
	// container after its creation, which the plugin's side tracks.
	Scope = &api.PluginScope{
		Namespaces:           []string{"team-*"},
		ContainerAnnotations: []*api.AnnotationMatch{{Key: AnnotationKey, Op: api.AnnotationMatch_EXISTS}},
	}
	// Required are the events the plugin cannot work without.
	Required = api.MaskOf(api.Event_CREATE_CONTAINER)
	// Policy is the plugin's failure policy.
	Policy = &api.FailurePolicy{FailRequest: true}
	// RequiredCapabilities are the capabilities the plugin requires.
	RequiredCapabilities = []capability.Capability{capability.Env, capability.Annotations}
	// Declared is the plugin's declarations, the one value both sides
	// are built with (stub.WithDeclarations, wasmguest.WithDeclarations).
	Declared = handler.Declarations{
		Scope:                Scope,
		RequiredEvents:       Required,
		FailurePolicy:        Policy,
		DefaultConfig:        DefaultConfig,
		RequiredCapabilities: capability.NewSet(RequiredCapabilities...),
	}
)

// AnnotationKey is the container annotation of Scope.
const AnnotationKey = "equiv.nrikit.io/on"

// DefaultConfig is the configuration the plugin gets when the runtime
// sends none.
const DefaultConfig = "default"

// NarrowConfig makes the plugin's Configure handler narrow its
// subscription to NarrowEvents.
const NarrowConfig = "narrow"

// NarrowEvents is the subscription NarrowConfig asks for.
var NarrowEvents = api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_START_CONTAINER, api.Event_UPDATE_CONTAINER, api.Event_STOP_CONTAINER)

// Plugin implements every handler interface, the nrikit extensions
// included. It opts out with wasmguest's sentinels, which are the stub's. A container named "fail" fails CreateContainer, one named
// "panic" panics in it, one named "reject" is rejected by the validator,
// one named "optout" is opted out of by CreateContainer.
type Plugin struct {
	mu    sync.Mutex
	notes []string
}

// note notes a call and returns the notes so far.
func (p *Plugin) note(format string, args ...any) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
	return strings.Join(p.notes, " ")
}

// Configure notes the configuration; NarrowConfig narrows the
// subscription.
func (p *Plugin) Configure(ctx context.Context, config, runtime, _ string) (api.EventMask, error) {
	told := "untold"
	if caps, ok := wasmguest.ToldCapabilities(ctx); ok {
		told = caps.String()
	}
	p.note("Configure(%s,%s,capabilities=%s)", config, runtime, told)
	if config == NarrowConfig {
		return NarrowEvents, nil
	}
	return 0, nil
}

// SynchronizeWithOptOut updates every container it is given and opts out
// of the pods named "optout".
func (p *Plugin) SynchronizeWithOptOut(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
	var names []string
	out := &api.OptOut{}
	for _, pod := range pods {
		names = append(names, pod.GetName())
		if pod.GetName() == "optout" {
			out.PodIds = append(out.PodIds, pod.GetId())
		}
	}
	var updates []*api.ContainerUpdate
	for _, c := range ctrs {
		names = append(names, c.GetName())
		updates = append(updates, &api.ContainerUpdate{ContainerId: c.GetId()})
	}
	notes := p.note("Synchronize(%s)", strings.Join(names, ","))
	updates = append(updates, &api.ContainerUpdate{ContainerId: "notes:" + notes})
	return updates, out, nil
}

// Shutdown notes the call.
func (p *Plugin) Shutdown(context.Context) { p.note("Shutdown") }

// RunPodSandbox opts out of pods named "optout".
func (p *Plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("RunPodSandbox(%s)", pod.GetName())
	if pod.GetName() == "optout" {
		return fmt.Errorf("pod %s: %w", pod.GetName(), wasmguest.ErrNotInterestedInPod)
	}
	return nil
}

// UpdatePodSandbox notes the call.
func (p *Plugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	p.note("UpdatePodSandbox(%s)", pod.GetName())
	return nil
}

// PostUpdatePodSandbox notes the call.
func (p *Plugin) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("PostUpdatePodSandbox(%s)", pod.GetName())
	return nil
}

// StopPodSandbox notes the call.
func (p *Plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("StopPodSandbox(%s)", pod.GetName())
	return nil
}

// RemovePodSandbox notes the call.
func (p *Plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.note("RemovePodSandbox(%s)", pod.GetName())
	return nil
}

// CreateContainerWithEvictions adjusts the container with the notes so
// far; see Plugin for the names that make it fail, panic or opt out.
func (p *Plugin) CreateContainerWithEvictions(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	notes := p.note("CreateContainer(%s)", ctr.GetName())
	switch ctr.GetName() {
	case "fail":
		return nil, nil, nil, errors.New("refused on purpose")
	case "panic":
		panic("panicked on purpose")
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("NOTES", notes)
	evict := []*api.ContainerEviction{{ContainerId: "victim-of-" + ctr.GetName()}}
	if ctr.GetName() == "optout" {
		return adj, nil, evict, wasmguest.ErrNotInterestedInContainer
	}
	return adj, nil, evict, nil
}

// PostCreateContainer notes the call.
func (p *Plugin) PostCreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("PostCreateContainer(%s)", ctr.GetName())
	return nil
}

// StartContainer notes the call.
func (p *Plugin) StartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("StartContainer(%s)", ctr.GetName())
	return nil
}

// PostStartContainer notes the call.
func (p *Plugin) PostStartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("PostStartContainer(%s)", ctr.GetName())
	return nil
}

// UpdateContainerWithEvictions answers with an update carrying the notes.
func (p *Plugin) UpdateContainerWithEvictions(_ context.Context, _ *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	notes := p.note("UpdateContainer(%s)", ctr.GetName())
	return []*api.ContainerUpdate{{ContainerId: "notes:" + notes}}, nil, nil
}

// PostUpdateContainer notes the call.
func (p *Plugin) PostUpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("PostUpdateContainer(%s)", ctr.GetName())
	return nil
}

// StopContainer answers with an update carrying the notes.
func (p *Plugin) StopContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	notes := p.note("StopContainer(%s)", ctr.GetName())
	return []*api.ContainerUpdate{{ContainerId: "notes:" + notes}}, nil
}

// RemoveContainer notes the call.
func (p *Plugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.note("RemoveContainer(%s)", ctr.GetName())
	return nil
}

// ValidateContainerAdjustment rejects containers named "reject", with the
// notes as the reason.
func (p *Plugin) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	notes := p.note("ValidateContainerAdjustment(%s)", req.GetContainer().GetName())
	if req.GetContainer().GetName() == "reject" {
		return errors.New("rejected: " + notes)
	}
	return nil
}
