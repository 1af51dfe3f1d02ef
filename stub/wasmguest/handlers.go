package wasmguest

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// The handler interfaces are the stub's (package
// github.com/nrikit/nrikit/stub, handlers.go). They are matched here by
// method set, not by name, because the stub does not build for wasip1: a
// type that implements stub.CreateContainerInterface implements the
// interface below, and the tests check that the two lists agree.

type (
	configureHandler interface {
		Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
	}
	synchronizeHandler interface {
		Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error)
	}
	synchronizeOptOutHandler interface {
		SynchronizeWithOptOut(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	}
	shutdownHandler interface{ Shutdown(ctx context.Context) }
	runPodHandler   interface {
		RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	updatePodHandler interface {
		UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error
	}
	postUpdatePodHandler interface {
		PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	stopPodHandler interface {
		StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	removePodHandler interface {
		RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	createContainerHandler interface {
		CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
	}
	createContainerEvicter interface {
		CreateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	}
	postCreateContainerHandler interface {
		PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	startContainerHandler interface {
		StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	postStartContainerHandler interface {
		PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	updateContainerHandler interface {
		UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, error)
	}
	updateContainerEvicter interface {
		UpdateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	}
	postUpdateContainerHandler interface {
		PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	stopContainerHandler interface {
		StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error)
	}
	removeContainerHandler interface {
		RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	validateHandler interface {
		ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
	}
)

type (
	podFunc       func(context.Context, *api.PodSandbox) error
	containerFunc func(context.Context, *api.PodSandbox, *api.Container) error
)

// handlers are the plugin's handlers; nil for those it does not
// implement.
type handlers struct {
	configure   func(context.Context, string, string, string) (api.EventMask, error)
	synchronize func(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	shutdown    func(context.Context)

	runPod, postUpdatePod, stopPod, removePod podFunc
	updatePod                                 func(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error

	createContainer func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	updateContainer func(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	stopContainer   func(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error)

	postCreateContainer, startContainer, postStartContainer, postUpdateContainer, removeContainer containerFunc

	validate func(context.Context, *api.ValidateContainerAdjustmentRequest) error
}

// collectHandlers finds the handlers plugin implements and the mask of
// the events they cover, with the stub's precedence (an Evicter or OptOut
// variant is used instead of the plain one).
func collectHandlers(plugin any) (handlers, api.EventMask, error) {
	var (
		h      handlers
		events api.EventMask
	)
	if plugin == nil {
		return h, 0, fmt.Errorf("wasmguest: nil plugin")
	}
	set := func(e api.Event) { events = events.Set(e) }
	if p, ok := plugin.(configureHandler); ok {
		h.configure = p.Configure
	}
	switch p := plugin.(type) {
	case synchronizeOptOutHandler:
		h.synchronize = p.SynchronizeWithOptOut
	case synchronizeHandler:
		h.synchronize = func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
			u, err := p.Synchronize(ctx, pods, ctrs)
			return u, nil, err
		}
	}
	if p, ok := plugin.(shutdownHandler); ok {
		h.shutdown = p.Shutdown
	}
	if p, ok := plugin.(runPodHandler); ok {
		h.runPod = p.RunPodSandbox
		set(api.Event_RUN_POD_SANDBOX)
	}
	if p, ok := plugin.(updatePodHandler); ok {
		h.updatePod = p.UpdatePodSandbox
		set(api.Event_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(postUpdatePodHandler); ok {
		h.postUpdatePod = p.PostUpdatePodSandbox
		set(api.Event_POST_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(stopPodHandler); ok {
		h.stopPod = p.StopPodSandbox
		set(api.Event_STOP_POD_SANDBOX)
	}
	if p, ok := plugin.(removePodHandler); ok {
		h.removePod = p.RemovePodSandbox
		set(api.Event_REMOVE_POD_SANDBOX)
	}
	switch p := plugin.(type) {
	case createContainerEvicter:
		h.createContainer = p.CreateContainerWithEvictions
		set(api.Event_CREATE_CONTAINER)
	case createContainerHandler:
		h.createContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
			a, u, err := p.CreateContainer(ctx, pod, c)
			return a, u, nil, err
		}
		set(api.Event_CREATE_CONTAINER)
	}
	if p, ok := plugin.(postCreateContainerHandler); ok {
		h.postCreateContainer = p.PostCreateContainer
		set(api.Event_POST_CREATE_CONTAINER)
	}
	if p, ok := plugin.(startContainerHandler); ok {
		h.startContainer = p.StartContainer
		set(api.Event_START_CONTAINER)
	}
	if p, ok := plugin.(postStartContainerHandler); ok {
		h.postStartContainer = p.PostStartContainer
		set(api.Event_POST_START_CONTAINER)
	}
	switch p := plugin.(type) {
	case updateContainerEvicter:
		h.updateContainer = p.UpdateContainerWithEvictions
		set(api.Event_UPDATE_CONTAINER)
	case updateContainerHandler:
		h.updateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
			u, err := p.UpdateContainer(ctx, pod, c, r)
			return u, nil, err
		}
		set(api.Event_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(postUpdateContainerHandler); ok {
		h.postUpdateContainer = p.PostUpdateContainer
		set(api.Event_POST_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(stopContainerHandler); ok {
		h.stopContainer = p.StopContainer
		set(api.Event_STOP_CONTAINER)
	}
	if p, ok := plugin.(removeContainerHandler); ok {
		h.removeContainer = p.RemoveContainer
		set(api.Event_REMOVE_CONTAINER)
	}
	if p, ok := plugin.(validateHandler); ok {
		h.validate = p.ValidateContainerAdjustment
		set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	if events == 0 {
		return h, 0, fmt.Errorf("wasmguest: plugin %T implements no event handler (such as CreateContainer)", plugin)
	}
	return h, events, nil
}
