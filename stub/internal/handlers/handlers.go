// Package handlers finds the event handlers a plugin implements, for the
// stub (package github.com/nrikit/nrikit/stub) and for its WASM guest
// support (stub/wasmguest), which cannot import the stub: the stub links
// ttrpc, which a WASM guest must not carry. The interfaces below are the
// method sets of the stub's exported handler interfaces (documented
// there); the stub checks at compile time that the two lists agree.
package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// The handler interfaces, matched by method set.
type (
	// ConfigureHandler is the method set of stub.ConfigureInterface.
	ConfigureHandler interface {
		Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
	}
	// SynchronizeHandler is the method set of stub.SynchronizeInterface.
	SynchronizeHandler interface {
		Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error)
	}
	// SynchronizeOptOutHandler is the method set of stub.SynchronizeOptOutInterface.
	SynchronizeOptOutHandler interface {
		SynchronizeWithOptOut(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	}
	// ShutdownHandler is the method set of stub.ShutdownInterface.
	ShutdownHandler interface{ Shutdown(ctx context.Context) }
	// RunPodHandler is the method set of stub.RunPodInterface.
	RunPodHandler interface {
		RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	// UpdatePodHandler is the method set of stub.UpdatePodInterface.
	UpdatePodHandler interface {
		UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error
	}
	// PostUpdatePodHandler is the method set of stub.PostUpdatePodInterface.
	PostUpdatePodHandler interface {
		PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	// StopPodHandler is the method set of stub.StopPodInterface.
	StopPodHandler interface {
		StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	// RemovePodHandler is the method set of stub.RemovePodInterface.
	RemovePodHandler interface {
		RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	}
	// CreateContainerHandler is the method set of stub.CreateContainerInterface.
	CreateContainerHandler interface {
		CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
	}
	// CreateContainerEvicter is the method set of stub.CreateContainerEvicter.
	CreateContainerEvicter interface {
		CreateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	}
	// PostCreateContainerHandler is the method set of stub.PostCreateContainerInterface.
	PostCreateContainerHandler interface {
		PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	// StartContainerHandler is the method set of stub.StartContainerInterface.
	StartContainerHandler interface {
		StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	// PostStartContainerHandler is the method set of stub.PostStartContainerInterface.
	PostStartContainerHandler interface {
		PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	// UpdateContainerHandler is the method set of stub.UpdateContainerInterface.
	UpdateContainerHandler interface {
		UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, error)
	}
	// UpdateContainerEvicter is the method set of stub.UpdateContainerEvicter.
	UpdateContainerEvicter interface {
		UpdateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	}
	// PostUpdateContainerHandler is the method set of stub.PostUpdateContainerInterface.
	PostUpdateContainerHandler interface {
		PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	// StopContainerHandler is the method set of stub.StopContainerInterface.
	StopContainerHandler interface {
		StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error)
	}
	// RemoveContainerHandler is the method set of stub.RemoveContainerInterface.
	RemoveContainerHandler interface {
		RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	}
	// ValidateHandler is the method set of stub.ValidateContainerAdjustmentInterface.
	ValidateHandler interface {
		ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
	}
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
	if p, ok := plugin.(ConfigureHandler); ok {
		h.Configure = p.Configure
	}
	switch p := plugin.(type) {
	case SynchronizeOptOutHandler:
		h.Synchronize = p.SynchronizeWithOptOut
	case SynchronizeHandler:
		h.Synchronize = func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
			u, err := p.Synchronize(ctx, pods, ctrs)
			return u, nil, err
		}
	}
	if p, ok := plugin.(ShutdownHandler); ok {
		h.Shutdown = p.Shutdown
	}
	if p, ok := plugin.(RunPodHandler); ok {
		h.RunPod = p.RunPodSandbox
		set(api.Event_RUN_POD_SANDBOX)
	}
	if p, ok := plugin.(UpdatePodHandler); ok {
		h.UpdatePod = p.UpdatePodSandbox
		set(api.Event_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(PostUpdatePodHandler); ok {
		h.PostUpdatePod = p.PostUpdatePodSandbox
		set(api.Event_POST_UPDATE_POD_SANDBOX)
	}
	if p, ok := plugin.(StopPodHandler); ok {
		h.StopPod = p.StopPodSandbox
		set(api.Event_STOP_POD_SANDBOX)
	}
	if p, ok := plugin.(RemovePodHandler); ok {
		h.RemovePod = p.RemovePodSandbox
		set(api.Event_REMOVE_POD_SANDBOX)
	}
	switch p := plugin.(type) {
	case CreateContainerEvicter:
		h.CreateContainer = p.CreateContainerWithEvictions
		set(api.Event_CREATE_CONTAINER)
	case CreateContainerHandler:
		h.CreateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
			a, u, err := p.CreateContainer(ctx, pod, c)
			return a, u, nil, err
		}
		set(api.Event_CREATE_CONTAINER)
	}
	if p, ok := plugin.(PostCreateContainerHandler); ok {
		h.PostCreateContainer = p.PostCreateContainer
		set(api.Event_POST_CREATE_CONTAINER)
	}
	if p, ok := plugin.(StartContainerHandler); ok {
		h.StartContainer = p.StartContainer
		set(api.Event_START_CONTAINER)
	}
	if p, ok := plugin.(PostStartContainerHandler); ok {
		h.PostStartContainer = p.PostStartContainer
		set(api.Event_POST_START_CONTAINER)
	}
	switch p := plugin.(type) {
	case UpdateContainerEvicter:
		h.UpdateContainer = p.UpdateContainerWithEvictions
		set(api.Event_UPDATE_CONTAINER)
	case UpdateContainerHandler:
		h.UpdateContainer = func(ctx context.Context, pod *api.PodSandbox, c *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
			u, err := p.UpdateContainer(ctx, pod, c, r)
			return u, nil, err
		}
		set(api.Event_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(PostUpdateContainerHandler); ok {
		h.PostUpdateContainer = p.PostUpdateContainer
		set(api.Event_POST_UPDATE_CONTAINER)
	}
	if p, ok := plugin.(StopContainerHandler); ok {
		h.StopContainer = p.StopContainer
		set(api.Event_STOP_CONTAINER)
	}
	if p, ok := plugin.(RemoveContainerHandler); ok {
		h.RemoveContainer = p.RemoveContainer
		set(api.Event_REMOVE_CONTAINER)
	}
	if p, ok := plugin.(ValidateHandler); ok {
		h.Validate = p.ValidateContainerAdjustment
		set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	}
	if events == 0 {
		return h, 0, fmt.Errorf("plugin %T implements no event handler (such as CreateContainer)", plugin)
	}
	return h, events, nil
}
