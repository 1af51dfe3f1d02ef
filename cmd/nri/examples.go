package main

import _ "embed"

// The scenario files of examples/ that nri plays without a file argument,
// embedded so that nri works from a bare binary: default.yaml is what
// `nri run` plays, serve.yaml what `nri serve` plays. wasm.yaml, not
// embedded, plays a WebAssembly plugin that `nri run` builds from the Go
// package examples/wasm-env next to it.
var (
	//go:embed examples/default.yaml
	defaultYAML string
	//go:embed examples/serve.yaml
	serveYAML string
)

// The names the embedded scenarios are reported under: their paths in the
// repository.
const (
	defaultScenarioName = "cmd/nri/examples/default.yaml"
	serveScenarioName   = "cmd/nri/examples/serve.yaml"
)

// defaultScenario is the scenario nri run plays without an argument.
func defaultScenario() (string, []byte) { return defaultScenarioName, []byte(defaultYAML) }

// serveScenario is the scenario nri serve plays without --scenario.
func serveScenario() (string, []byte) { return serveScenarioName, []byte(serveYAML) }
