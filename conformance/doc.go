// Package conformance checks NRI plugins and runtimes against the protocol
// of docs/protocol.md, the checker behind `nri check plugin` and `nri check
// runtime`.
//
// CheckPlugin plays the runtime: it launches a plugin the way a runtime
// does (a socket pair as file descriptor 3 and the NRI_PLUGIN_*
// environment) or accepts one external plugin on a socket, and drives it
// through registration, configuration, single and chunked Synchronize, every
// subscribed event, events it did not subscribe to, Shutdown and the closing
// of the socket. Events go as a runtime sends them: to a plugin of NRI v0.11
// or earlier, which answers UNIMPLEMENTED to the RPCs v0.12 added, as
// StateChange (api.StateChangeEvents). A WASM plugin module is loaded in-process instead, as
// nrikit's runtime loads one, and gets every check that does not need a
// connection; those that do are reported skipped. CheckRuntime plays a
// plugin against a runtime's socket.
//
// The runtime side is written directly with the mux package, ttrpc and the
// generated api services rather than with the adaptation package, so that
// the checker can do what a correct runtime never does, such as sending
// events the plugin did not subscribe to.
//
// Each check yields a Result; a Report collects them and renders them as
// text or JSON. Checks of what the NRI protocol requires pass or fail;
// informational results (Result.Informational: event latency, how a
// runtime treats nrikit's extensions and recommendations) report what the
// peer did and never fail a report, so that a runtime or plugin that
// follows upstream NRI, containerd among them, passes. A check failing does not abort the run unless later checks
// cannot run without it (no registration, no configuration).
package conformance
