// Package handler defines the interfaces through which an NRI plugin
// handles the runtime's requests: one per event (RunPodSandbox,
// CreateContainer, ...) and for Configure, Synchronize and Shutdown. A
// plugin is any value that implements some of them; the front end that
// serves it finds which, and subscribes it to their events:
//
//	type plugin struct{}
//
//	var _ handler.CreateContainerInterface = (*plugin)(nil)
//
//	func (p *plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
//		...
//	}
//
// The same plugin runs as a process with package stub (stub.New) and as a
// WebAssembly module with package stub/wasmguest (wasmguest.Register):
// this package depends on package api only, not on a transport, so a WASM
// guest links it without ttrpc. The interfaces have the method
// signatures of containerd/nri's stub package, so a plugin written for
// upstream implements them unchanged; the Evicter and OptOut variants are
// nrikit extensions.
//
// A RunPodSandbox or CreateContainer handler may return
// [ErrNotInterestedInPod] or [ErrNotInterestedInContainer] (also wrapped)
// to opt out of further events about a pod or a container (see the
// documentation of package stub); stub and wasmguest export the same
// errors under the same names.
package handler

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/api"
)

// ConfigureInterface handles the Configure request.
type ConfigureInterface interface {
	// Configure hands the plugin its configuration (which may be empty,
	// or the front end's default configuration: stub.WithDefaultConfig,
	// wasmguest.WithDefaultConfig) and the runtime's name and version. A non-zero result replaces the
	// plugin's subscription; it must be a subset of the events the
	// plugin implements handlers for.
	Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
}

// SynchronizeInterface handles the Synchronize request.
type SynchronizeInterface interface {
	// Synchronize hands the plugin all existing pods and containers (those
	// in its scope); the plugin may answer with updates to containers.
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

// The opt-out sentinels, one value for package stub and package
// stub/wasmguest (each exports them under the same name), so that a
// plugin built for both returns the same error in either.
var (
	// ErrNotInterestedInPod opts out of further events about a pod (and
	// its containers): returned (also wrapped) by a RunPodSandbox or
	// CreateContainer handler, it is answered successfully with the pod's
	// ID in the answer's opt-out.
	ErrNotInterestedInPod = errors.New("stub: not interested in pod")
	// ErrNotInterestedInContainer opts out of further events about a
	// container: returned (also wrapped) by a CreateContainer handler, it
	// is answered successfully with the container's ID in the answer's
	// opt-out.
	ErrNotInterestedInContainer = errors.New("stub: not interested in container")
)
