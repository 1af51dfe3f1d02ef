package stub

import "github.com/nrikit/nrikit/stub/internal/handlers"

// The handler interfaces a plugin implements some of. They are defined
// once, in an internal package that the stub's WASM guest support
// (package stub/wasmguest) shares, and are the same types under the
// stub's names: a plugin written against them runs as a process and as
// a WASM module. Each one's method is shown with it (TestHandlerDocs
// checks the signatures against the definitions).
type (
	// ConfigureInterface handles the Configure request: the plugin gets
	// its configuration (which may be empty, or [WithDefaultConfig]'s)
	// and the runtime's name and version. A non-zero result replaces the
	// plugin's subscription; it must be a subset of the events the plugin
	// implements handlers for.
	//
	//	Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error)
	ConfigureInterface = handlers.ConfigureInterface
	// SynchronizeInterface handles the Synchronize request: the plugin
	// gets all existing pods and containers (those in its scope) and may
	// answer with updates to containers.
	//
	//	Synchronize(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, error)
	SynchronizeInterface = handlers.SynchronizeInterface
	// SynchronizeOptOutInterface is a nrikit extension of
	// [SynchronizeInterface]: a plugin implementing it may also opt out
	// of events about some of the existing pods and containers. It is
	// used instead of SynchronizeInterface when a plugin implements both.
	//
	//	SynchronizeWithOptOut(ctx context.Context, pods []*api.PodSandbox, containers []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error)
	SynchronizeOptOutInterface = handlers.SynchronizeOptOutInterface
	// ShutdownInterface handles the Shutdown request: the runtime is
	// shutting down; the stub stops after the handler returns.
	//
	//	Shutdown(ctx context.Context)
	ShutdownInterface = handlers.ShutdownInterface
	// RunPodInterface handles RunPodSandbox events: a pod is being
	// started.
	//
	//	RunPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	RunPodInterface = handlers.RunPodInterface
	// UpdatePodInterface handles UpdatePodSandbox requests: the resources
	// of a pod are being updated.
	//
	//	UpdatePodSandbox(ctx context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error
	UpdatePodInterface = handlers.UpdatePodInterface
	// PostUpdatePodInterface handles PostUpdatePodSandbox events: the
	// resources of a pod were updated.
	//
	//	PostUpdatePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	PostUpdatePodInterface = handlers.PostUpdatePodInterface
	// StopPodInterface handles StopPodSandbox events: a pod is being
	// stopped.
	//
	//	StopPodSandbox(ctx context.Context, pod *api.PodSandbox) error
	StopPodInterface = handlers.StopPodInterface
	// RemovePodInterface handles RemovePodSandbox events: a pod was
	// removed.
	//
	//	RemovePodSandbox(ctx context.Context, pod *api.PodSandbox) error
	RemovePodInterface = handlers.RemovePodInterface
	// CreateContainerInterface handles CreateContainer requests: a
	// container is being created; the plugin may adjust it and update
	// other containers.
	//
	//	CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
	CreateContainerInterface = handlers.CreateContainerInterface
	// CreateContainerEvicter is a nrikit extension of
	// [CreateContainerInterface] whose handler can also ask the runtime
	// to evict containers. It is used instead of CreateContainerInterface
	// when a plugin implements both.
	//
	//	CreateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error)
	CreateContainerEvicter = handlers.CreateContainerEvicter
	// PostCreateContainerInterface handles PostCreateContainer events: a
	// container was created.
	//
	//	PostCreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	PostCreateContainerInterface = handlers.PostCreateContainerInterface
	// StartContainerInterface handles StartContainer events: a container
	// is being started.
	//
	//	StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	StartContainerInterface = handlers.StartContainerInterface
	// PostStartContainerInterface handles PostStartContainer events: a
	// container was started.
	//
	//	PostStartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	PostStartContainerInterface = handlers.PostStartContainerInterface
	// UpdateContainerInterface handles UpdateContainer requests: the
	// resources of a container are being updated; the plugin may alter
	// the update (an update for the container itself supersedes the
	// original) and update other containers.
	//
	//	UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, error)
	UpdateContainerInterface = handlers.UpdateContainerInterface
	// UpdateContainerEvicter is a nrikit extension of
	// [UpdateContainerInterface] whose handler can also ask the runtime
	// to evict containers. It is used instead of UpdateContainerInterface
	// when a plugin implements both.
	//
	//	UpdateContainerWithEvictions(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, resources *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error)
	UpdateContainerEvicter = handlers.UpdateContainerEvicter
	// PostUpdateContainerInterface handles PostUpdateContainer events:
	// the resources of a container were updated.
	//
	//	PostUpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	PostUpdateContainerInterface = handlers.PostUpdateContainerInterface
	// StopContainerInterface handles StopContainer requests: a container
	// is being stopped; the plugin may update the remaining containers.
	//
	//	StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error)
	StopContainerInterface = handlers.StopContainerInterface
	// RemoveContainerInterface handles RemoveContainer events: a
	// container was removed.
	//
	//	RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error
	RemoveContainerInterface = handlers.RemoveContainerInterface
	// ValidateContainerAdjustmentInterface handles
	// ValidateContainerAdjustment requests: it checks the combined
	// adjustment of a container being created; an error rejects it, with
	// the error's message as the reason.
	//
	//	ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error
	ValidateContainerAdjustmentInterface = handlers.ValidateContainerAdjustmentInterface
)
