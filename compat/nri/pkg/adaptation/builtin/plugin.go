// Package builtin is upstream's pkg/adaptation/builtin on nrikit: a
// plugin that runs inside the runtime, as a set of request handlers. A
// runtime registers it with adaptation.WithBuiltinPlugins; nrikit calls it
// like any plugin (its adaptation.WithBuiltinPlugin), without a
// connection.
package builtin

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// BuiltinPlugin is an in-process plugin: its name (Base), index and
// handlers. It implements the Plugin service.
//
//nolint:revive // upstream's name
type BuiltinPlugin struct {
	Base     string
	Index    string
	Handlers BuiltinHandlers
}

// BuiltinHandlers are a builtin plugin's handlers; the plugin handles the
// events whose handler is set.
//
//nolint:revive // upstream's name
type BuiltinHandlers struct {
	Configure                   func(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error)
	Synchronize                 func(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error)
	RunPodSandbox               func(context.Context, *api.RunPodSandboxRequest) error
	StopPodSandbox              func(context.Context, *api.StopPodSandboxRequest) error
	RemovePodSandbox            func(context.Context, *api.RemovePodSandboxRequest) error
	UpdatePodSandbox            func(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error)
	PostUpdatePodSandbox        func(context.Context, *api.PostUpdatePodSandboxRequest) error
	CreateContainer             func(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error)
	PostCreateContainer         func(context.Context, *api.PostCreateContainerRequest) error
	StartContainer              func(context.Context, *api.StartContainerRequest) error
	PostStartContainer          func(context.Context, *api.PostStartContainerRequest) error
	UpdateContainer             func(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error)
	PostUpdateContainer         func(context.Context, *api.PostUpdateContainerRequest) error
	StopContainer               func(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error)
	RemoveContainer             func(context.Context, *api.RemoveContainerRequest) error
	ValidateContainerAdjustment func(context.Context, *api.ValidateContainerAdjustmentRequest) error
}

// events is the mask of the events whose handler is set.
func (h *BuiltinHandlers) events() api.EventMask {
	var m api.EventMask
	for e, set := range map[api.Event]bool{
		api.Event_RUN_POD_SANDBOX:               h.RunPodSandbox != nil,
		api.Event_STOP_POD_SANDBOX:              h.StopPodSandbox != nil,
		api.Event_REMOVE_POD_SANDBOX:            h.RemovePodSandbox != nil,
		api.Event_UPDATE_POD_SANDBOX:            h.UpdatePodSandbox != nil,
		api.Event_POST_UPDATE_POD_SANDBOX:       h.PostUpdatePodSandbox != nil,
		api.Event_CREATE_CONTAINER:              h.CreateContainer != nil,
		api.Event_POST_CREATE_CONTAINER:         h.PostCreateContainer != nil,
		api.Event_START_CONTAINER:               h.StartContainer != nil,
		api.Event_POST_START_CONTAINER:          h.PostStartContainer != nil,
		api.Event_UPDATE_CONTAINER:              h.UpdateContainer != nil,
		api.Event_POST_UPDATE_CONTAINER:         h.PostUpdateContainer != nil,
		api.Event_STOP_CONTAINER:                h.StopContainer != nil,
		api.Event_REMOVE_CONTAINER:              h.RemoveContainer != nil,
		api.Event_VALIDATE_CONTAINER_ADJUSTMENT: h.ValidateContainerAdjustment != nil,
	} {
		if set {
			m = m.Set(e)
		}
	}
	return m
}

// Configure calls the Configure handler; without one, or when it
// subscribes to nothing, the plugin subscribes to the events it has
// handlers for.
func (b *BuiltinPlugin) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rsp, err := answer(ctx, b.Handlers.Configure, req)
	if err != nil {
		return nil, err
	}
	if rsp.Events == 0 {
		rsp.Events = int32(b.Handlers.events())
	}
	return rsp, nil
}

// Synchronize calls the Synchronize handler.
func (b *BuiltinPlugin) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return answer(ctx, b.Handlers.Synchronize, req)
}

// Shutdown does nothing: a builtin plugin stops with the runtime.
func (b *BuiltinPlugin) Shutdown(context.Context, *api.ShutdownRequest) (*api.ShutdownResponse, error) {
	return &api.ShutdownResponse{}, nil
}

// RunPodSandbox calls the RunPodSandbox handler.
func (b *BuiltinPlugin) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return notify[api.RunPodSandboxResponse](ctx, b.Handlers.RunPodSandbox, req)
}

// UpdatePodSandbox calls the UpdatePodSandbox handler.
func (b *BuiltinPlugin) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return answer(ctx, b.Handlers.UpdatePodSandbox, req)
}

// PostUpdatePodSandbox calls the PostUpdatePodSandbox handler.
func (b *BuiltinPlugin) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return notify[api.PostUpdatePodSandboxResponse](ctx, b.Handlers.PostUpdatePodSandbox, req)
}

// StopPodSandbox calls the StopPodSandbox handler.
func (b *BuiltinPlugin) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return notify[api.StopPodSandboxResponse](ctx, b.Handlers.StopPodSandbox, req)
}

// RemovePodSandbox calls the RemovePodSandbox handler.
func (b *BuiltinPlugin) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return notify[api.RemovePodSandboxResponse](ctx, b.Handlers.RemovePodSandbox, req)
}

// CreateContainer calls the CreateContainer handler.
func (b *BuiltinPlugin) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return answer(ctx, b.Handlers.CreateContainer, req)
}

// PostCreateContainer calls the PostCreateContainer handler.
func (b *BuiltinPlugin) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return notify[api.PostCreateContainerResponse](ctx, b.Handlers.PostCreateContainer, req)
}

// StartContainer calls the StartContainer handler.
func (b *BuiltinPlugin) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return notify[api.StartContainerResponse](ctx, b.Handlers.StartContainer, req)
}

// PostStartContainer calls the PostStartContainer handler.
func (b *BuiltinPlugin) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return notify[api.PostStartContainerResponse](ctx, b.Handlers.PostStartContainer, req)
}

// UpdateContainer calls the UpdateContainer handler.
func (b *BuiltinPlugin) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return answer(ctx, b.Handlers.UpdateContainer, req)
}

// PostUpdateContainer calls the PostUpdateContainer handler.
func (b *BuiltinPlugin) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return notify[api.PostUpdateContainerResponse](ctx, b.Handlers.PostUpdateContainer, req)
}

// StopContainer calls the StopContainer handler.
func (b *BuiltinPlugin) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return answer(ctx, b.Handlers.StopContainer, req)
}

// RemoveContainer calls the RemoveContainer handler.
func (b *BuiltinPlugin) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return notify[api.RemoveContainerResponse](ctx, b.Handlers.RemoveContainer, req)
}

// StateChange answers empty: the runtime sends a builtin plugin each
// event through its own method.
func (b *BuiltinPlugin) StateChange(context.Context, *api.StateChangeEvent) (*api.StateChangeResponse, error) {
	return &api.StateChangeResponse{}, nil
}

// ValidateContainerAdjustment calls the ValidateContainerAdjustment
// handler: its error rejects the adjustment, with the error as reason.
func (b *BuiltinPlugin) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	if h := b.Handlers.ValidateContainerAdjustment; h != nil {
		if err := h(ctx, req); err != nil {
			return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
		}
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

// answer calls a handler that answers (an empty answer without handler,
// or when the handler gives none).
func answer[Req, Rsp any](ctx context.Context, h func(context.Context, *Req) (*Rsp, error), req *Req) (*Rsp, error) {
	if h == nil {
		return new(Rsp), nil
	}
	rsp, err := h(ctx, req)
	if rsp == nil && err == nil {
		rsp = new(Rsp)
	}
	return rsp, err
}

// notify calls an event handler, which answers nothing.
func notify[Rsp, Req any](ctx context.Context, h func(context.Context, *Req) error, req *Req) (*Rsp, error) {
	if h == nil {
		return new(Rsp), nil
	}
	return new(Rsp), h(ctx, req)
}
