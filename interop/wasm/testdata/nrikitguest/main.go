// Command nrikitguest is a WASM plugin built with nrikit's
// stub/wasmguest from handlers written for the stub: it subscribes to
// CreateContainer and adjusts the container as upstreamguest does. It
// logs what its Synchronize handler gets ("synchronize: pods=N
// containers=M"), once for all the parts the runtime split it into.
package main

import (
	"context"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

type plugin struct{}

func (plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	wasmguest.Log(api.LogRequest_LEVEL_INFO, fmt.Sprintf("synchronize: pods=%d containers=%d", len(pods), len(ctrs)))
	return nil, nil
}

func (plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("WASM_GUEST", "adjusted")
	adj.AddAnnotation("wasm.example.com/guest", "ctr="+ctr.GetName())
	return adj, nil, nil
}

func init() { wasmguest.Register(plugin{}) }

func main() {}
