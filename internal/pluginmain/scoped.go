package pluginmain

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/stub"
)

// scoped enforces a plugin's scope on the plugin's side. The scope is
// also sent to the runtime (stub.WithScope), but a runtime that does not
// evaluate scopes (upstream's, or one of nrikit's that predates scope
// support) sends every event; scoped then answers the events about other
// pods and containers itself, without changes, so that the plugin
// behaves the same on every runtime. Creation events out of scope are
// answered with the opt-out extension (stub.ErrNotInterestedInPod), so a
// runtime that understands it sends no more events about the pod.
//
// scoped implements every handler of the stub and calls those the plugin
// implements; the stub is subscribed to the plugin's events only (see
// handledEvents).
type scoped struct {
	inner any
	f     *filter.Filter
}

// newScoped wraps plugin in its scope. Plugins with the nrikit-specific
// handler variants (evictions, Synchronize opt-out) are not supported.
func newScoped(plugin any, scope *api.PluginScope) (*scoped, api.EventMask, error) {
	switch plugin.(type) {
	case stub.CreateContainerEvicter, stub.UpdateContainerEvicter, stub.SynchronizeOptOutInterface:
		return nil, 0, fmt.Errorf("plugin-side scopes do not support %T's handler variants", plugin)
	}
	f, err := filter.Compile(scope)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid scope: %w", err)
	}
	events := handledEvents(plugin)
	if events == 0 {
		return nil, 0, fmt.Errorf("plugin %T implements no event handler", plugin)
	}
	return &scoped{inner: plugin, f: f}, events, nil
}

// handledEvents returns the events plugin implements handlers for.
func handledEvents(plugin any) api.EventMask {
	var m api.EventMask
	set := func(ok bool, e api.Event) {
		if ok {
			m = m.Set(e)
		}
	}
	_, ok := plugin.(stub.RunPodInterface)
	set(ok, api.Event_RUN_POD_SANDBOX)
	_, ok = plugin.(stub.UpdatePodInterface)
	set(ok, api.Event_UPDATE_POD_SANDBOX)
	_, ok = plugin.(stub.PostUpdatePodInterface)
	set(ok, api.Event_POST_UPDATE_POD_SANDBOX)
	_, ok = plugin.(stub.StopPodInterface)
	set(ok, api.Event_STOP_POD_SANDBOX)
	_, ok = plugin.(stub.RemovePodInterface)
	set(ok, api.Event_REMOVE_POD_SANDBOX)
	_, ok = plugin.(stub.CreateContainerInterface)
	set(ok, api.Event_CREATE_CONTAINER)
	_, ok = plugin.(stub.PostCreateContainerInterface)
	set(ok, api.Event_POST_CREATE_CONTAINER)
	_, ok = plugin.(stub.StartContainerInterface)
	set(ok, api.Event_START_CONTAINER)
	_, ok = plugin.(stub.PostStartContainerInterface)
	set(ok, api.Event_POST_START_CONTAINER)
	_, ok = plugin.(stub.UpdateContainerInterface)
	set(ok, api.Event_UPDATE_CONTAINER)
	_, ok = plugin.(stub.PostUpdateContainerInterface)
	set(ok, api.Event_POST_UPDATE_CONTAINER)
	_, ok = plugin.(stub.StopContainerInterface)
	set(ok, api.Event_STOP_CONTAINER)
	_, ok = plugin.(stub.RemoveContainerInterface)
	set(ok, api.Event_REMOVE_CONTAINER)
	_, ok = plugin.(stub.ValidateContainerAdjustmentInterface)
	set(ok, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	return m
}

// Configure passes the configuration on.
func (s *scoped) Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error) {
	if p, ok := s.inner.(stub.ConfigureInterface); ok {
		return p.Configure(ctx, config, runtime, version)
	}
	return 0, nil
}

// Synchronize passes on the pods and containers in scope.
func (s *scoped) Synchronize(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p, ok := s.inner.(stub.SynchronizeInterface)
	if !ok {
		return nil, nil
	}
	byID := map[string]*api.PodSandbox{}
	var inPods []*api.PodSandbox
	for _, pod := range pods {
		byID[pod.GetId()] = pod
		if s.f.MatchPod(pod) {
			inPods = append(inPods, pod)
		}
	}
	var inCtrs []*api.Container
	for _, c := range ctrs {
		if pod := byID[c.GetPodSandboxId()]; pod != nil && s.f.MatchContainer(pod, c) {
			inCtrs = append(inCtrs, c)
		}
	}
	return p.Synchronize(ctx, inPods, inCtrs)
}

// Shutdown passes the shutdown on.
func (s *scoped) Shutdown(ctx context.Context) {
	if p, ok := s.inner.(stub.ShutdownInterface); ok {
		p.Shutdown(ctx)
	}
}

// RunPodSandbox passes the event on, or opts out of a pod out of scope.
func (s *scoped) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if !s.f.MatchPod(pod) {
		return stub.ErrNotInterestedInPod
	}
	return s.inner.(stub.RunPodInterface).RunPodSandbox(ctx, pod)
}

// UpdatePodSandbox passes the event on if the pod is in scope.
func (s *scoped) UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, res *api.LinuxResources) error {
	if !s.f.MatchPod(pod) {
		return nil
	}
	return s.inner.(stub.UpdatePodInterface).UpdatePodSandbox(ctx, pod, overhead, res)
}

// PostUpdatePodSandbox passes the event on if the pod is in scope.
func (s *scoped) PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if !s.f.MatchPod(pod) {
		return nil
	}
	return s.inner.(stub.PostUpdatePodInterface).PostUpdatePodSandbox(ctx, pod)
}

// StopPodSandbox passes the event on if the pod is in scope.
func (s *scoped) StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if !s.f.MatchPod(pod) {
		return nil
	}
	return s.inner.(stub.StopPodInterface).StopPodSandbox(ctx, pod)
}

// RemovePodSandbox passes the event on if the pod is in scope.
func (s *scoped) RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error {
	if !s.f.MatchPod(pod) {
		return nil
	}
	return s.inner.(stub.RemovePodInterface).RemovePodSandbox(ctx, pod)
}

// CreateContainer passes the request on, or opts out of a container out
// of scope (of its pod, if the pod is out of scope).
func (s *scoped) CreateContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	switch {
	case !s.f.MatchPod(pod):
		return nil, nil, stub.ErrNotInterestedInPod
	case !s.f.MatchContainer(pod, c):
		return nil, nil, stub.ErrNotInterestedInContainer
	}
	return s.inner.(stub.CreateContainerInterface).CreateContainer(ctx, pod, c)
}

// PostCreateContainer passes the event on if the container is in scope.
func (s *scoped) PostCreateContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if !s.f.MatchContainer(pod, c) {
		return nil
	}
	return s.inner.(stub.PostCreateContainerInterface).PostCreateContainer(ctx, pod, c)
}

// StartContainer passes the event on if the container is in scope.
func (s *scoped) StartContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if !s.f.MatchContainer(pod, c) {
		return nil
	}
	return s.inner.(stub.StartContainerInterface).StartContainer(ctx, pod, c)
}

// PostStartContainer passes the event on if the container is in scope.
func (s *scoped) PostStartContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if !s.f.MatchContainer(pod, c) {
		return nil
	}
	return s.inner.(stub.PostStartContainerInterface).PostStartContainer(ctx, pod, c)
}

// UpdateContainer passes the request on if the container is in scope.
func (s *scoped) UpdateContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	if !s.f.MatchContainer(pod, c) {
		return nil, nil
	}
	return s.inner.(stub.UpdateContainerInterface).UpdateContainer(ctx, pod, c, res)
}

// PostUpdateContainer passes the event on if the container is in scope.
func (s *scoped) PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if !s.f.MatchContainer(pod, c) {
		return nil
	}
	return s.inner.(stub.PostUpdateContainerInterface).PostUpdateContainer(ctx, pod, c)
}

// StopContainer passes the request on if the container is in scope.
func (s *scoped) StopContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	if !s.f.MatchContainer(pod, c) {
		return nil, nil
	}
	return s.inner.(stub.StopContainerInterface).StopContainer(ctx, pod, c)
}

// RemoveContainer passes the event on if the container is in scope.
func (s *scoped) RemoveContainer(ctx context.Context, pod *api.PodSandbox, c *api.Container) error {
	if !s.f.MatchContainer(pod, c) {
		return nil
	}
	return s.inner.(stub.RemoveContainerInterface).RemoveContainer(ctx, pod, c)
}

// ValidateContainerAdjustment passes the request on if the container is in
// scope, and accepts the others.
func (s *scoped) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if !s.f.MatchContainer(req.GetPod(), req.GetContainer()) {
		return nil
	}
	return s.inner.(stub.ValidateContainerAdjustmentInterface).ValidateContainerAdjustment(ctx, req)
}
