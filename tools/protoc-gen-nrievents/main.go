// Command protoc-gen-nrievents is a protoc plugin (run by `make generate`
// through buf) that writes nrikit's event table from the proto: one row per
// value of enum Event, with its method name, WASM export, request and
// response, kind, the NRI release that first delivers it, whether it is a
// pod event and whether NRI v0.11 and earlier deliver it through
// StateChange. The facts the proto does not say are read from the "nri:"
// comment line above each value; the rest (the method, its request and
// response, pod or container) from the Plugin service. It fails when an
// event has no line, no method of its name or a malformed line, so that an
// event cannot be added without its facts. The runtime's RPC table, the
// WASM ABI and the plugin library's version checks derive from the
// generated table (docs/internals.md, Adding an event).
package main

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
)

func main() {
	protogen.Options{}.Run(func(gen *protogen.Plugin) error {
		for _, f := range gen.Files {
			if !f.Generate {
				continue
			}
			t, err := readEvents(f)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Desc.Path(), err)
			}
			if t != nil {
				writeEvents(gen, f, t)
			}
		}
		return nil
	})
}
