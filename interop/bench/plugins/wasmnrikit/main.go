//go:build wasip1

// Command wasmnrikit is the benchmark's WASM plugin, built with nrikit's
// stub/wasmguest (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared):
// the work of the process plugins (bench/plugins/nrikit), adding one
// environment variable in CreateContainer and ignoring PostStartContainer
// and Synchronize. A WASM plugin has no sidecar file: the variable comes
// from its configuration, KEY=VALUE, which the runtime reads from
// IDX-NAME.conf in its configuration directory. The same module runs on
// nrikit's runtime and on upstream's.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

type plugin struct{ key, value string }

// Configure takes the variable to add from the configuration.
func (p *plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	key, value, ok := strings.Cut(strings.TrimSpace(config), "=")
	if !ok || key == "" {
		return 0, fmt.Errorf("wasmnrikit: configuration %q is not KEY=VALUE", config)
	}
	p.key, p.value = key, value
	return 0, nil // the events handled below
}

func (p *plugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(p.key, p.value)
	return adj, nil, nil
}

func (p *plugin) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}

func (p *plugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func init() { wasmguest.Register(&plugin{}) }

func main() {}
