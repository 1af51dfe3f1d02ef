// Command equivguest is equivplugin's plugin as a WASM guest, with the
// options the equivalence test gives the stub.
package main

import (
	"github.com/nrikit/nrikit/stub/wasmguest"
	"github.com/nrikit/nrikit/stub/wasmguest/internal/equivplugin"
)

func init() {
	wasmguest.Register(&equivplugin.Plugin{},
		wasmguest.WithScope(equivplugin.Scope),
		wasmguest.WithRequiredEvents(equivplugin.Required),
		wasmguest.WithFailurePolicy(equivplugin.Policy),
		wasmguest.WithDefaultConfig(equivplugin.DefaultConfig),
		wasmguest.WithRequiredCapabilities(equivplugin.RequiredCapabilities...))
}

func main() {}
