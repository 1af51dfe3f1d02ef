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

	"github.com/nrikit/nrikit/interop/internal/upstreamglue"
)

type plugin struct {
	upstreamglue.Unimplemented
	key, value string
}

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

// Every other request is answered empty by upstreamglue.Unimplemented.

func init() { api.RegisterPlugin(&plugin{}) }

func main() {}
