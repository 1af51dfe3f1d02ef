//go:build scoped

package main

import (
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/wasmguest"
)

func options() []wasmguest.Option {
	return []wasmguest.Option{wasmguest.WithScope(&api.PluginScope{Namespaces: []string{"kube-*"}})}
}
