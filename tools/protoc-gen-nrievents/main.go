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
//
// It also writes the code that repeats per event with the event's types:
// api's UnimplementedPluginService, and, for the packages its options
// name (wasmabi=, wasmhost=, wasmguest=, replay=: import paths), the WASM
// ABI's export constants, the WASM host's Client methods, the WASM
// guest's constants, dispatch cases and //go:wasmexport functions, and
// the simulator's replay of the notifications.
package main

import (
	"flag"
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
)

func main() {
	var flags flag.FlagSet
	abi := flags.String("wasmabi", "", "import path of package wasmabi, which gets the export constants")
	host := flags.String("wasmhost", "", "import path of package wasmhost, which gets the Client methods")
	guest := flags.String("wasmguest", "", "import path of package wasmguest, which gets the exports and dispatch")
	replay := flags.String("replay", "", "import path of the simulator's package, which gets the replay of the notifications")
	protogen.Options{ParamFunc: flags.Set}.Run(func(gen *protogen.Plugin) error {
		for _, f := range gen.Files {
			if !f.Generate {
				continue
			}
			t, err := readEvents(f)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Desc.Path(), err)
			}
			if t == nil {
				continue
			}
			writeEvents(gen, f, t)
			if err := writeGlue(gen, f, t, gluePaths{
				wasmabi: protogen.GoImportPath(*abi), wasmhost: protogen.GoImportPath(*host), wasmguest: protogen.GoImportPath(*guest),
				replay: protogen.GoImportPath(*replay),
			}); err != nil {
				return fmt.Errorf("%s: %w", f.Desc.Path(), err)
			}
		}
		return nil
	})
}
