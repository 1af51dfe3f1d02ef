// Package bench is nrikit's performance harness (issue 9): go test
// benchmarks that measure nrikit's runtime and plugin libraries against a
// physical floor and against upstream (containerd/nri v0.12.5), side by
// side in the same run, with every plugin a separate process (WASM
// plugins aside, see below).
//
// The floor is a bare ttrpc unary CreateContainer round trip over a unix
// socket to a child process, with the same request bytes as the other
// scenarios (workload.CreateRequest, about 2 KB). Each scenario is run
// with upstream's pkg/adaptation and upstream-stub plugins, then with
// nrikit's adaptation and stub plugins; each figure is reported as a
// ratio to the floor and as nrikit/upstream, and BenchmarkNRI ends by
// printing the table of docs/benchmarks.md.
//
// Its last section runs WASM plugins (issue 18), which both runtimes load
// in-process from their plugin directory: the same work in a WebAssembly
// module, the same module on both runtimes (plugins/wasmnrikit, built
// with stub/wasmguest; plugins/wasmupstream, built with upstream's glue,
// for one more row). Load times and memory are measured in runtime
// processes of their own (runtimes/*, internal/memrun), since the
// compilation cache that "cached" loads read is on disk.
//
// Run it with `make bench-interop` (see docs/benchmarks.md); plain `go test`
// runs only the cheap checks of the workload.
package bench
