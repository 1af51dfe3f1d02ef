//go:build wasip1

// Command wasmupstream is the benchmark's WASM plugin built against
// upstream NRI's WASM glue (github.com/containerd/nri/pkg/api v0.12.5, as
// upstream's WASM plugins are): the same work and configuration as
// wasmnrikit, KEY=VALUE from the runtime's configuration directory, added
// as an environment variable in CreateContainer; subscribed to
// CreateContainer and PostStartContainer.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/nri/pkg/api"
)

type plugin struct{ key, value string }

func (p *plugin) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	key, value, ok := strings.Cut(strings.TrimSpace(req.GetConfig()), "=")
	if !ok || key == "" {
		return nil, fmt.Errorf("wasmupstream: configuration %q is not KEY=VALUE", req.GetConfig())
	}
	p.key, p.value = key, value
	events := api.MustParseEventMask("CreateContainer", "PostStartContainer")
	return &api.ConfigureResponse{Events: int32(events)}, nil
}

func (p *plugin) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(p.key, p.value)
	return &api.CreateContainerResponse{Adjust: adj}, nil
}

func (p *plugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
}

func (p *plugin) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}

// The rest answer empty, as an upstream plugin without these handlers.

func (p *plugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) { return &api.Empty{}, nil }
func (p *plugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, nil
}
func (p *plugin) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, nil
}
func (p *plugin) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, nil
}
func (p *plugin) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}
func (p *plugin) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}
func (p *plugin) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, nil
}
func (p *plugin) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, nil
}
func (p *plugin) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, nil
}
func (p *plugin) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, nil
}
func (p *plugin) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, nil
}
func (p *plugin) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, nil
}
func (p *plugin) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}
func (p *plugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

func init() { api.RegisterPlugin(&plugin{}) }

func main() {}
