// Command sizeguest is the smallest WASM plugin module built with
// wasmguest, for TestGuestLinksNoTransport: it handles CreateContainer
// and, built with the tag scoped, declares a scope.
package main

import (
	"context"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

type plugin struct{}

func (plugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "SIZE", Value: "guest"}}}, nil, nil
}

func init() { wasmguest.Register(plugin{}, options()...) }

func main() {}
