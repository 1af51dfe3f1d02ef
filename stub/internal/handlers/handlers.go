// Package handlers collects the handlers a plugin implements (the
// interfaces of package stub/handler) into a [Set] of functions, with the
// mask of the events they cover, and turns the opt-out sentinels into an
// OptOut, for the plugin core (stub/internal/core) that the stub and
// stub/wasmguest share.
package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/handler"
)

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
	if p, ok := plugin.(handler.ConfigureInterface); ok {
		h.Configure = p.Configure
	}
	switch p := plugin.(type) {
	case handler.SynchronizeOptOutInterface:
		h.Synchronize = p.SynchronizeWithOptOut
	case handler.SynchronizeInterface:
		h.Synchronize = func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
			u, err := p.Synchronize(ctx, pods, ctrs)
			return u, nil, err
		}
	}
	if p, ok := plugin.(handler.ShutdownInterface); ok {
		h.Shutdown = p.Shutdown
	}
	if p, ok := plugin.(handler.RunPodInterface); ok {
		h.RunPod = p.RunPodSandbox
		set(api.Event_RUN_POD_SANDBOX)
	}
	if p, ok := plugin.(handler.UpdatePodInterface); ok {
		h.UpdatePod = p.UpdatePodSandbox
		set(api.Event_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(handler.PostUpdatePodInterface); ok {
		h.PostUpdatePod = p.PostUpdatePodSandbox
		set(api.Event_POST_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(handler.StopPodInterface); ok {
		h.StopPod = p.StopPodSandbox
		set(api.Event_STOP_POD_SANDBOX)
	}
	if p, ok := plugin.(handler.RemovePodInterface); ok {
		h.RemovePod = p.RemovePodSandbox
		set(api.Event_REMOVE_POD_SANDBOX)
	}
	switch p := plugin.(type) {
	case handler.CreateContainerEvicter:
		h.CreateContainer = p.CreateContainerWithEvictions
		set(api.Event_CREATE_CONTAINER)
	case handler.CreateContainerInterface:
		h.CreateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
			a, u, err := p.CreateContainer(ctx, pod, c)
			return a, u, nil, err
		}
		set(api.Event_CREATE_CONTAINER)
	}
	if p, ok := plugin.(handler.PostCreateContainerInterface); ok {
		h.PostCreateContainer = p.PostCreateContainer
		set(api.Event_POST_CREATE_CONTAINER)
	}
	if p, ok := plugin.(handler.StartContainerInterface); ok {
		h.StartContainer = p.StartContainer
		set(api.Event_START_CONTAINER)
	}
	if p, ok := plugin.(handler.PostStartContainerInterface); ok {
		h.PostStartContainer = p.PostStartContainer
		set(api.Event_POST_START_CONTAINER)
	}
	switch p := plugin.(type) {
	case handler.UpdateContainerEvicter:
		h.UpdateContainer = p.UpdateContainerWithEvictions
		set(api.Event_UPDATE_CONTAINER)
	case handler.UpdateContainerInterface:
		h.UpdateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
			u, err := p.UpdateContainer(ctx, pod, c, r)
			return u, nil, err
		}
		set(api.Event_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(handler.PostUpdateContainerInterface); ok {
		h.PostUpdateContainer = p.PostUpdateContainer
		set(api.Event_POST_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(handler.StopContainerInterface); ok {
		h.StopContainer = p.StopContainer
		set(api.Event_STOP_CONTAINER)
	}
	if p, ok := plugin.(handler.RemoveContainerInterface); ok {
		h.RemoveContainer = p.RemoveContainer
		set(api.Event_REMOVE_CONTAINER)
	}
	if p, ok := plugin.(handler.ValidateContainerAdjustmentInterface); ok {
		h.Validate = p.ValidateContainerAdjustment
		set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	if events == 0 {
		return h, 0, fmt.Errorf("plugin %T implements no event handler (such as CreateContainer)", plugin)
	}
	return h, events, nil
}
