// Package upstreamglue holds what the interop module's WASM guests built
// against upstream NRI's generated glue (github.com/containerd/nri/pkg/api,
// as upstream's WASM plugins are) share: that glue's plugin interface has a
// method for every request, all required.
package upstreamglue

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// Unimplemented answers every request of the glue's plugin interface with
// an empty response (for Configure: subscribed to all events). A guest
// embeds it and defines the methods of the requests it handles.
type Unimplemented struct{}

// Configure answers with an empty ConfigureResponse.
func (Unimplemented) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{}, nil
}

// Synchronize answers with an empty SynchronizeResponse.
func (Unimplemented) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}

// Shutdown answers with an empty Empty.
func (Unimplemented) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// RunPodSandbox answers with an empty RunPodSandboxResponse.
func (Unimplemented) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox answers with an empty UpdatePodSandboxResponse.
func (Unimplemented) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox answers with an empty PostUpdatePodSandboxResponse.
func (Unimplemented) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox answers with an empty StopPodSandboxResponse.
func (Unimplemented) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox answers with an empty RemovePodSandboxResponse.
func (Unimplemented) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}

// CreateContainer answers with an empty CreateContainerResponse.
func (Unimplemented) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return &api.CreateContainerResponse{}, nil
}

// PostCreateContainer answers with an empty PostCreateContainerResponse.
func (Unimplemented) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer answers with an empty StartContainerResponse.
func (Unimplemented) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer answers with an empty PostStartContainerResponse.
func (Unimplemented) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer answers with an empty UpdateContainerResponse.
func (Unimplemented) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, nil
}

// PostUpdateContainer answers with an empty PostUpdateContainerResponse.
func (Unimplemented) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer answers with an empty StopContainerResponse.
func (Unimplemented) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, nil
}

// RemoveContainer answers with an empty RemoveContainerResponse.
func (Unimplemented) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, nil
}

// StateChange answers with an empty Empty.
func (Unimplemented) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment answers with an empty ValidateContainerAdjustmentResponse.
func (Unimplemented) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
