// Command equivguest is equivplugin's plugin as a WASM guest, with the
// declarations the equivalence test gives the stub.
package main

import (
	"github.com/nrikit/nrikit/stub/wasmguest"
	"github.com/nrikit/nrikit/stub/wasmguest/internal/equivplugin"
)

func init() {
	wasmguest.Register(&equivplugin.Plugin{}, wasmguest.WithDeclarations(equivplugin.Declared))
}

func main() {}
