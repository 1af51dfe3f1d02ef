//go:build wasip1

// Command wasm-env is the WebAssembly plugin of the example scenario
// wasm.yaml: in every container it creates (in pods labelled
// wasm-env=on, its scope) it sets the environment variables of its
// configuration, one KEY=VALUE a line, and WASM_ENV_POD to the
// container's pod as namespace/name. It is an ordinary Go plugin written
// against the stub's handler interfaces, turned into a module by
// stub/wasmguest; nri run builds it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o 50-wasm-env .
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

// plugin sets its configured environment variables in containers.
type plugin struct {
	env [][2]string // KEY, VALUE in the configuration's order
}

// Configure reads the configuration: KEY=VALUE lines, blank lines and
// # comments.
func (p *plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	p.env = nil
	for i, line := range strings.Split(config, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return 0, fmt.Errorf("configuration line %d: %q is not KEY=VALUE", i+1, line)
		}
		p.env = append(p.env, [2]string{k, v})
	}
	return 0, nil
}

// CreateContainer sets the variables.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	for _, kv := range p.env {
		adj.AddEnv(kv[0], kv[1])
	}
	adj.AddEnv("WASM_ENV_POD", pod.GetNamespace()+"/"+pod.GetName())
	return adj, nil, nil
}

// A c-shared module runs its init functions when the host initialises
// it, never main.
func init() {
	wasmguest.Register(&plugin{}, wasmguest.WithScope(&api.PluginScope{PodLabelSelector: "wasm-env=on"}))
}

func main() {}
