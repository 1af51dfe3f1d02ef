package stub

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// ConfigureInterface handles the Configure request.
type ConfigureInterface interface {
	// Configure hands the plugin its configuration (which may be empty)
	// and the runtime's name and version. A non-zero result replaces the
	// plugin's subscription; it must be a subset of the events the
	// plugin implements handlers for.
	Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
}

// SynchronizeInterface handles the Synchronize request.
type SynchronizeInterface interface {
	// Synchronize hands the plugin all existing pods and containers; the
	// plugin may answer with updates to containers.
	Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error)
}

// SynchronizeOptOutInterface is a nrikit extension of
// [SynchronizeInterface]: a plugin implementing it may also opt out of
// events about some of the existing pods and containers. It is used
// instead of SynchronizeInterface when a plugin implements both.
type SynchronizeOptOutInterface interface {
	// SynchronizeWithOptOut is Synchronize with an additional result:
	// the pods and containers the plugin wants no events about (nil for
	// none).
	SynchronizeWithOptOut(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
}

// ShutdownInterface handles the Shutdown request.
type ShutdownInterface interface {
	// Shutdown tells the plugin that the runtime is shutting down. The
	// stub stops after the handler returns.
	Shutdown(ctx context.Context)
}

// RunPodInterface handles RunPodSandbox events.
type RunPodInterface interface {
	// RunPodSandbox: a pod is being started.
	RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// UpdatePodInterface handles UpdatePodSandbox requests.
type UpdatePodInterface interface {
	// UpdatePodSandbox: the resources of a pod are being updated, to the
	// given overhead and resources.
	UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error
}

// PostUpdatePodInterface handles PostUpdatePodSandbox events.
type PostUpdatePodInterface interface {
	// PostUpdatePodSandbox: the resources of a pod were updated.
	PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// StopPodInterface handles StopPodSandbox events.
type StopPodInterface interface {
	// StopPodSandbox: a pod is being stopped.
	StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// RemovePodInterface handles RemovePodSandbox events.
type RemovePodInterface interface {
	// RemovePodSandbox: a pod was removed.
	RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error
}

// CreateContainerInterface handles CreateContainer requests.
type CreateContainerInterface interface {
	// CreateContainer: a container is being created. The plugin may
	// adjust it and update other containers.
	CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
}

// CreateContainerEvicter is a nrikit extension of
// [CreateContainerInterface] whose handler can also ask the runtime to
// evict containers. It is used instead of CreateContainerInterface when a
// plugin implements both.
type CreateContainerEvicter interface {
	// CreateContainerWithEvictions is CreateContainer with an additional
	// result: containers to evict (nil for none).
	CreateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
}

// PostCreateContainerInterface handles PostCreateContainer events.
type PostCreateContainerInterface interface {
	// PostCreateContainer: a container was created.
	PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// StartContainerInterface handles StartContainer events.
type StartContainerInterface interface {
	// StartContainer: a container is being started.
	StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// PostStartContainerInterface handles PostStartContainer events.
type PostStartContainerInterface interface {
	// PostStartContainer: a container was started.
	PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// UpdateContainerInterface handles UpdateContainer requests.
type UpdateContainerInterface interface {
	// UpdateContainer: the resources of a container are being updated.
	// The plugin may alter the update (an update for the container
	// itself supersedes the original) and update other containers.
	UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, error)
}

// UpdateContainerEvicter is a nrikit extension of
// [UpdateContainerInterface] whose handler can also ask the runtime to
// evict containers. It is used instead of UpdateContainerInterface when a
// plugin implements both.
type UpdateContainerEvicter interface {
	// UpdateContainerWithEvictions is UpdateContainer with an additional
	// result: containers to evict (nil for none).
	UpdateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
}

// PostUpdateContainerInterface handles PostUpdateContainer events.
type PostUpdateContainerInterface interface {
	// PostUpdateContainer: the resources of a container were updated.
	PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// StopContainerInterface handles StopContainer requests.
type StopContainerInterface interface {
	// StopContainer: a container is being stopped. The plugin may update
	// the remaining containers.
	StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error)
}

// RemoveContainerInterface handles RemoveContainer events.
type RemoveContainerInterface interface {
	// RemoveContainer: a container was removed.
	RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
}

// ValidateContainerAdjustmentInterface handles ValidateContainerAdjustment
// requests.
type ValidateContainerAdjustmentInterface interface {
	// ValidateContainerAdjustment checks the combined adjustment of a
	// container being created; an error rejects it, with the error's
	// message as the reason.
	ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
}

// Handler function types, one per handler shape.
type (
	podFunc       = func(context.Context, *api.PodSandbox) error
	containerFunc = func(context.Context, *api.PodSandbox, *api.Container) error
)

// handlers holds the plugin's handlers; nil fields are not implemented.
type handlers struct {
	configure   func(context.Context, string, string, string) (api.EventMask, error)
	synchronize func(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	shutdown    func(context.Context)

	runPod        podFunc
	updatePod     func(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error
	postUpdatePod podFunc
	stopPod       podFunc
	removePod     podFunc

	createContainer     func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	postCreateContainer containerFunc
	startContainer      containerFunc
	postStartContainer  containerFunc
	updateContainer     func(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	postUpdateContainer containerFunc
	stopContainer       func(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error)
	removeContainer     containerFunc

	validate func(context.Context, *api.ValidateContainerAdjustmentRequest) error
}

// collectHandlers finds the handler interfaces plugin implements and
// returns its handlers and the mask of events they cover.
func collectHandlers(plugin any) (handlers, api.EventMask, error) {
	var (
		h      handlers
		events api.EventMask
	)
	if plugin == nil {
		return h, 0, fmt.Errorf("stub: nil plugin")
	}
	if p, ok := plugin.(ConfigureInterface); ok {
		h.configure = p.Configure
	}
	switch p := plugin.(type) {
	case SynchronizeOptOutInterface:
		h.synchronize = p.SynchronizeWithOptOut
	case SynchronizeInterface:
		h.synchronize = func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
			u, err := p.Synchronize(ctx, pods, ctrs)
			return u, nil, err
		}
	}
	if p, ok := plugin.(ShutdownInterface); ok {
		h.shutdown = p.Shutdown
	}

	pod := func(e api.Event, f podFunc, dst *podFunc) {
		*dst = f
		events = events.Set(e)
	}
	ctr := func(e api.Event, f containerFunc, dst *containerFunc) {
		*dst = f
		events = events.Set(e)
	}
	if p, ok := plugin.(RunPodInterface); ok {
		pod(api.Event_RUN_POD_SANDBOX, p.RunPodSandbox, &h.runPod)
	}
	if p, ok := plugin.(UpdatePodInterface); ok {
		h.updatePod = p.UpdatePodSandbox
		events = events.Set(api.Event_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(PostUpdatePodInterface); ok {
		pod(api.Event_POST_UPDATE_POD_SANDBOX, p.PostUpdatePodSandbox, &h.postUpdatePod)
	}
	if p, ok := plugin.(StopPodInterface); ok {
		pod(api.Event_STOP_POD_SANDBOX, p.StopPodSandbox, &h.stopPod)
	}
	if p, ok := plugin.(RemovePodInterface); ok {
		pod(api.Event_REMOVE_POD_SANDBOX, p.RemovePodSandbox, &h.removePod)
	}

	switch p := plugin.(type) {
	case CreateContainerEvicter:
		h.createContainer = p.CreateContainerWithEvictions
		events = events.Set(api.Event_CREATE_CONTAINER)
	case CreateContainerInterface:
		h.createContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
			a, u, err := p.CreateContainer(ctx, pod, c)
			return a, u, nil, err
		}
		events = events.Set(api.Event_CREATE_CONTAINER)
	}
	if p, ok := plugin.(PostCreateContainerInterface); ok {
		ctr(api.Event_POST_CREATE_CONTAINER, p.PostCreateContainer, &h.postCreateContainer)
	}
	if p, ok := plugin.(StartContainerInterface); ok {
		ctr(api.Event_START_CONTAINER, p.StartContainer, &h.startContainer)
	}
	if p, ok := plugin.(PostStartContainerInterface); ok {
		ctr(api.Event_POST_START_CONTAINER, p.PostStartContainer, &h.postStartContainer)
	}
	switch p := plugin.(type) {
	case UpdateContainerEvicter:
		h.updateContainer = p.UpdateContainerWithEvictions
		events = events.Set(api.Event_UPDATE_CONTAINER)
	case UpdateContainerInterface:
		h.updateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
			u, err := p.UpdateContainer(ctx, pod, c, r)
			return u, nil, err
		}
		events = events.Set(api.Event_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(PostUpdateContainerInterface); ok {
		ctr(api.Event_POST_UPDATE_CONTAINER, p.PostUpdateContainer, &h.postUpdateContainer)
	}
	if p, ok := plugin.(StopContainerInterface); ok {
		h.stopContainer = p.StopContainer
		events = events.Set(api.Event_STOP_CONTAINER)
	}
	if p, ok := plugin.(RemoveContainerInterface); ok {
		ctr(api.Event_REMOVE_CONTAINER, p.RemoveContainer, &h.removeContainer)
	}
	if p, ok := plugin.(ValidateContainerAdjustmentInterface); ok {
		h.validate = p.ValidateContainerAdjustment
		events = events.Set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}

	if events == 0 {
		return h, 0, fmt.Errorf("stub: plugin %T implements no event handler (such as CreateContainerInterface)", plugin)
	}
	return h, events, nil
}
