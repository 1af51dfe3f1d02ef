// Package wasmguest turns a plugin written for the stub into an NRI
// WebAssembly plugin module, with the ABI of upstream NRI's WASM plugins
// (docs/wasm-abi.md): the same module runs on nrikit's runtime and on
// upstream's (containerd, CRI-O).
//
// The plugin implements some of the handler interfaces of package
// stub/handler (handler.ConfigureInterface,
// handler.CreateContainerInterface, …, including
// nrikit's Evicter and OptOut variants). Its main package registers it
// from an init function, because a module built as a library runs its
// init functions when the host initialises it, never main:
//
//	//go:build wasip1
//
//	package main
//
//	import "github.com/nrikit/nrikit/stub/wasmguest"
//
//	func init() { wasmguest.Register(&plugin{}) }
//
//	func main() {}
//
// and is built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm
//
// (without -buildmode=c-shared the module is a command, which hosts
// refuse). To build the same plugin as a process too, keep the handlers
// in files without build constraints and put the stub's main in a file
// constrained to !wasip1: package stub does not build for wasip1, so the
// handlers must not use it (they use package api only).
//
// The package exports, through //go:wasmexport in its wasip1 files,
// plugin_api_version, malloc, free and plugin_<request> for Configure,
// Synchronize, Shutdown, StateChange and every event (the ABI's names and
// encoding, defined once for this package and nrikit's host in
// internal/wasmabi), and nrikit_split_synchronize, which tells a nrikit
// runtime that the guest handles a Synchronize split into parts (it
// gathers them for the plugin's handler): a large snapshot then comes in
// parts of at most 1 MiB, as over a connection, instead of in one request
// as upstream's runtime sends it. A request is decoded and served by the same
// transport-free core as a stub process serves its connection with
// (stub/internal/core), so a plugin answers alike as a process and as a
// module (TestProcessAndWASMAnswerAlike plays one plugin both ways and
// compares every answer):
//
//   - Configure hands the plugin's Configure handler the runtime's
//     configuration, or [WithDefaultConfig]'s when the runtime sends
//     none, and answers with the subscription: the events the plugin
//     handles (or [WithSubscription]'s, or the Configure handler's
//     non-zero result), restricted to those the runtime delivers as it
//     advertises them, as its NRI version (reported, or inferred from its
//     name and version) implies, or as the oldest NRI release does;
//     [WithRequiredEvents] events must be among them. On a WASM plugin the
//     Configure response is the subscription.
//   - A request the plugin has no handler for is answered empty. A
//     handler error is answered as an error string, except the opt-out
//     sentinels ([ErrNotInterestedInPod], the stub's too), which become
//     the answer's opt-out in RunPodSandbox and CreateContainer and
//     success elsewhere; a validator's error rejects the adjustment; a
//     handler panic is recovered into an error string (and its stack
//     logged).
//   - A scope ([WithScope]) is sent to the runtime and, on a runtime that
//     does not evaluate scopes, enforced in the guest without CEL, as the
//     stub enforces it: a scope on container annotations is decided at a
//     container's creation and remembered until its removal.
//
// The strings of the pods and containers a handler is given point into
// the buffer the host wrote the request to (the guest's own, which the
// host frees after the call and never touches again) instead of being
// copied: in a guest an allocation is dear, and a CreateContainer request
// has about 150 strings. A handler that keeps one of them keeps that
// request's buffer (a few kilobytes) in the guest's memory; keep a copy
// (strings.Clone) of what is kept for long.
//
// [Log] writes to the host's log through the env.log import, where the
// guest's own diagnostics go too; stdout and stderr reach the log of
// nrikit's runtime (upstream's discards them).
//
// Size: a guest links neither ttrpc (package api's ttrpc services are
// not built for wasip1) nor, unless the plugin uses [WithScope], the
// scope filter and its regular expressions; the template plugin's module
// is about 8.0 MB (7.8 MB with -ldflags='-s -w'), most of it the Go
// runtime and protobuf's reflection.
//
// [Guest] is platform-neutral: [New] and [Guest.Handle] serve the ABI's
// requests from protobuf bytes to protobuf bytes, and run in ordinary
// tests.
package wasmguest
