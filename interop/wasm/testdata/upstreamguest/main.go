// Command upstreamguest is a WASM plugin built against upstream NRI's
// generated WASM glue (github.com/containerd/nri/pkg/api, as upstream's
// WASM plugins are): it subscribes to CreateContainer and adjusts the
// container as nrikitguest does.
package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

type plugin struct{ config string }

func (p *plugin) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	p.config = req.GetConfig()
	_, _ = api.NewHostFunctions().Log(ctx, &api.LogRequest{Msg: "upstreamguest configured by " + req.GetRuntimeName(), Level: api.LogRequest_LEVEL_INFO})
	return &api.ConfigureResponse{Events: int32(api.EventMask(1) << (api.Event_CREATE_CONTAINER - 1))}, nil
}

func (p *plugin) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("WASM_GUEST", "adjusted")
	adj.AddAnnotation("wasm.example.com/guest", "ctr="+req.GetContainer().GetName())
	return &api.CreateContainerResponse{Adjust: adj}, nil
}

func (p *plugin) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{}, nil
}
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
func (p *plugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
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

func main() {}

func init() { api.RegisterPlugin(&plugin{}) }
