// Package examples holds the scenario files of the nri command, embedded
// so that `nri run` works from a bare binary: default.yaml is the
// scenario `nri run` plays without an argument, serve.yaml a starting
// point for testing external plugins with `nri serve`. wasm.yaml, not
// embedded, plays a WebAssembly plugin that `nri run` builds from the Go
// package wasm-env next to it.
package examples

import _ "embed"

//go:embed default.yaml
var defaultYAML string

//go:embed serve.yaml
var serveYAML string

// Default returns examples/default.yaml.
func Default() []byte { return []byte(defaultYAML) }

// Serve returns examples/serve.yaml.
func Serve() []byte { return []byte(serveYAML) }
