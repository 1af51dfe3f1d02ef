// Command upstreamguest is a WASM plugin built against upstream NRI's
// generated WASM glue (github.com/containerd/nri/pkg/api, as upstream's
// WASM plugins are): it subscribes to CreateContainer and adjusts the
// container as nrikitguest does.
package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/interop/internal/upstreamglue"
)

type plugin struct {
	upstreamglue.Unimplemented
	config string
}

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

func main() {}

func init() { api.RegisterPlugin(&plugin{}) }
