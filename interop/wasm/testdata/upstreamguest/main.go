// Command upstreamguest is a WASM plugin built against upstream NRI's
// generated WASM glue (github.com/containerd/nri/pkg/api, as upstream's
// WASM plugins are): it subscribes to CreateContainer and adjusts the
// container as nrikitguest does. It logs what each Synchronize request
// holds ("synchronize: pods=N containers=M more=B") and answers it as
// upstream's example plugin does, without looking at more.
package main

import (
	"context"
	"fmt"

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

func (p *plugin) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	msg := fmt.Sprintf("synchronize: pods=%d containers=%d more=%v", len(req.GetPods()), len(req.GetContainers()), req.GetMore())
	_, _ = api.NewHostFunctions().Log(ctx, &api.LogRequest{Msg: msg, Level: api.LogRequest_LEVEL_INFO})
	return &api.SynchronizeResponse{}, nil
}

func (p *plugin) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("WASM_GUEST", "adjusted")
	adj.AddAnnotation("wasm.example.com/guest", "ctr="+req.GetContainer().GetName())
	return &api.CreateContainerResponse{Adjust: adj}, nil
}

func main() {}

func init() { api.RegisterPlugin(&plugin{}) }
