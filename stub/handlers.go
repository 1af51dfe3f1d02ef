package stub

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
	phandlers "github.com/nrikit/nrikit/stub/internal/handlers"
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
	podFunc       = phandlers.PodFunc
	containerFunc = phandlers.ContainerFunc
)

// handlers holds the plugin's handlers; nil fields are not implemented.
type handlers = phandlers.Set

// collectHandlers finds the handler interfaces plugin implements and
// returns its handlers and the mask of events they cover.
func collectHandlers(plugin any) (handlers, api.EventMask, error) {
	h, events, err := phandlers.Collect(plugin)
	if err != nil {
		return h, 0, fmt.Errorf("stub: %w", err)
	}
	return h, events, nil
}

// The handler interfaces above and the method sets the shared collector
// (which stub/wasmguest uses too) matches are the same, both ways.
var (
	_ phandlers.ConfigureHandler           = ConfigureInterface(nil)
	_ ConfigureInterface                   = phandlers.ConfigureHandler(nil)
	_ phandlers.SynchronizeHandler         = SynchronizeInterface(nil)
	_ SynchronizeInterface                 = phandlers.SynchronizeHandler(nil)
	_ phandlers.SynchronizeOptOutHandler   = SynchronizeOptOutInterface(nil)
	_ SynchronizeOptOutInterface           = phandlers.SynchronizeOptOutHandler(nil)
	_ phandlers.ShutdownHandler            = ShutdownInterface(nil)
	_ ShutdownInterface                    = phandlers.ShutdownHandler(nil)
	_ phandlers.RunPodHandler              = RunPodInterface(nil)
	_ RunPodInterface                      = phandlers.RunPodHandler(nil)
	_ phandlers.UpdatePodHandler           = UpdatePodInterface(nil)
	_ UpdatePodInterface                   = phandlers.UpdatePodHandler(nil)
	_ phandlers.PostUpdatePodHandler       = PostUpdatePodInterface(nil)
	_ PostUpdatePodInterface               = phandlers.PostUpdatePodHandler(nil)
	_ phandlers.StopPodHandler             = StopPodInterface(nil)
	_ StopPodInterface                     = phandlers.StopPodHandler(nil)
	_ phandlers.RemovePodHandler           = RemovePodInterface(nil)
	_ RemovePodInterface                   = phandlers.RemovePodHandler(nil)
	_ phandlers.CreateContainerHandler     = CreateContainerInterface(nil)
	_ CreateContainerInterface             = phandlers.CreateContainerHandler(nil)
	_ phandlers.PostCreateContainerHandler = PostCreateContainerInterface(nil)
	_ PostCreateContainerInterface         = phandlers.PostCreateContainerHandler(nil)
	_ phandlers.StartContainerHandler      = StartContainerInterface(nil)
	_ StartContainerInterface              = phandlers.StartContainerHandler(nil)
	_ phandlers.PostStartContainerHandler  = PostStartContainerInterface(nil)
	_ PostStartContainerInterface          = phandlers.PostStartContainerHandler(nil)
	_ phandlers.UpdateContainerHandler     = UpdateContainerInterface(nil)
	_ UpdateContainerInterface             = phandlers.UpdateContainerHandler(nil)
	_ phandlers.PostUpdateContainerHandler = PostUpdateContainerInterface(nil)
	_ PostUpdateContainerInterface         = phandlers.PostUpdateContainerHandler(nil)
	_ phandlers.StopContainerHandler       = StopContainerInterface(nil)
	_ StopContainerInterface               = phandlers.StopContainerHandler(nil)
	_ phandlers.RemoveContainerHandler     = RemoveContainerInterface(nil)
	_ RemoveContainerInterface             = phandlers.RemoveContainerHandler(nil)
	_ phandlers.CreateContainerEvicter     = CreateContainerEvicter(nil)
	_ CreateContainerEvicter               = phandlers.CreateContainerEvicter(nil)
	_ phandlers.UpdateContainerEvicter     = UpdateContainerEvicter(nil)
	_ UpdateContainerEvicter               = phandlers.UpdateContainerEvicter(nil)
	_ phandlers.ValidateHandler            = ValidateContainerAdjustmentInterface(nil)
	_ ValidateContainerAdjustmentInterface = phandlers.ValidateHandler(nil)
)
