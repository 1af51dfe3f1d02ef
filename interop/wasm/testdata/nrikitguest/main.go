// Command nrikitguest is a WASM plugin built with nrikit's
// stub/wasmguest from handlers written for the stub: it subscribes to
// CreateContainer and adjusts the container as upstreamguest does.
package main

import (
	"context"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

type plugin struct{}

func (plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("WASM_GUEST", "adjusted")
	adj.AddAnnotation("wasm.example.com/guest", "ctr="+ctr.GetName())
	return adj, nil, nil
}

func init() { wasmguest.Register(plugin{}) }

func main() {}
