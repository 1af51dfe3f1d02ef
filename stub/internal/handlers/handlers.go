// Package handlers defines, once, the handler interfaces an NRI plugin
// implements (its events' handlers and Configure, Synchronize and
// Shutdown), and finds those a plugin implements. Package stub exports
// them under the same names (stub.CreateContainerInterface is an alias of
// [CreateContainerInterface]); they live here because the stub's WASM
// guest support (stub/wasmguest) uses them too and cannot import the
// stub, which links ttrpc.
package handlers

import (
	"context"
	"errors"
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
	// Shutdown tells the plugin that the runtime is shutting down. A
	// stub stops after the handler returns; a WASM plugin's module is
	// closed.
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

// PodFunc is the shape of a pod event's handler.
type PodFunc = func(context.Context, *api.PodSandbox) error

// ContainerFunc is the shape of a container event's handler without
// results.
type ContainerFunc = func(context.Context, *api.PodSandbox, *api.Container) error

// Set is a plugin's handlers; nil for those it does not implement. The
// Evicter and OptOut variants take the place of the plain ones.
type Set struct {
	Configure   func(context.Context, string, string, string) (api.EventMask, error)
	Synchronize func(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	Shutdown    func(context.Context)

	RunPod, PostUpdatePod, StopPod, RemovePod PodFunc
	UpdatePod                                 func(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error

	CreateContainer func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	UpdateContainer func(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	StopContainer   func(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error)

	PostCreateContainer, StartContainer, PostStartContainer, PostUpdateContainer, RemoveContainer ContainerFunc

	Validate func(context.Context, *api.ValidateContainerAdjustmentRequest) error
}

// Collect finds the handlers plugin implements and the mask of the
// events they cover (Configure, Synchronize and Shutdown are not events).
// It fails for a nil plugin and for one without any event handler.
func Collect(plugin any) (Set, api.EventMask, error) {
	var (
		h      Set
		events api.EventMask
	)
	if plugin == nil {
		return h, 0, errors.New("nil plugin")
	}
	set := func(e api.Event) { events = events.Set(e) }
	if p, ok := plugin.(ConfigureInterface); ok {
		h.Configure = p.Configure
	}
	switch p := plugin.(type) {
	case SynchronizeOptOutInterface:
		h.Synchronize = p.SynchronizeWithOptOut
	case SynchronizeInterface:
		h.Synchronize = func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
			u, err := p.Synchronize(ctx, pods, ctrs)
			return u, nil, err
		}
	}
	if p, ok := plugin.(ShutdownInterface); ok {
		h.Shutdown = p.Shutdown
	}
	if p, ok := plugin.(RunPodInterface); ok {
		h.RunPod = p.RunPodSandbox
		set(api.Event_RUN_POD_SANDBOX)
	}
	if p, ok := plugin.(UpdatePodInterface); ok {
		h.UpdatePod = p.UpdatePodSandbox
		set(api.Event_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(PostUpdatePodInterface); ok {
		h.PostUpdatePod = p.PostUpdatePodSandbox
		set(api.Event_POST_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(StopPodInterface); ok {
		h.StopPod = p.StopPodSandbox
		set(api.Event_STOP_POD_SANDBOX)
	}
	if p, ok := plugin.(RemovePodInterface); ok {
		h.RemovePod = p.RemovePodSandbox
		set(api.Event_REMOVE_POD_SANDBOX)
	}
	switch p := plugin.(type) {
	case CreateContainerEvicter:
		h.CreateContainer = p.CreateContainerWithEvictions
		set(api.Event_CREATE_CONTAINER)
	case CreateContainerInterface:
		h.CreateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
			a, u, err := p.CreateContainer(ctx, pod, c)
			return a, u, nil, err
		}
		set(api.Event_CREATE_CONTAINER)
	}
	if p, ok := plugin.(PostCreateContainerInterface); ok {
		h.PostCreateContainer = p.PostCreateContainer
		set(api.Event_POST_CREATE_CONTAINER)
	}
	if p, ok := plugin.(StartContainerInterface); ok {
		h.StartContainer = p.StartContainer
		set(api.Event_START_CONTAINER)
	}
	if p, ok := plugin.(PostStartContainerInterface); ok {
		h.PostStartContainer = p.PostStartContainer
		set(api.Event_POST_START_CONTAINER)
	}
	switch p := plugin.(type) {
	case UpdateContainerEvicter:
		h.UpdateContainer = p.UpdateContainerWithEvictions
		set(api.Event_UPDATE_CONTAINER)
	case UpdateContainerInterface:
		h.UpdateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
			u, err := p.UpdateContainer(ctx, pod, c, r)
			return u, nil, err
		}
		set(api.Event_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(PostUpdateContainerInterface); ok {
		h.PostUpdateContainer = p.PostUpdateContainer
		set(api.Event_POST_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(StopContainerInterface); ok {
		h.StopContainer = p.StopContainer
		set(api.Event_STOP_CONTAINER)
	}
	if p, ok := plugin.(RemoveContainerInterface); ok {
		h.RemoveContainer = p.RemoveContainer
		set(api.Event_REMOVE_CONTAINER)
	}
	if p, ok := plugin.(ValidateContainerAdjustmentInterface); ok {
		h.Validate = p.ValidateContainerAdjustment
		set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	if events == 0 {
		return h, 0, fmt.Errorf("plugin %T implements no event handler (such as CreateContainer)", plugin)
	}
	return h, events, nil
}
