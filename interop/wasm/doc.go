// Package wasm holds the interoperability tests of WebAssembly plugins
// (issue 18), both ways: a guest built against upstream NRI's generated
// WASM glue runs on nrikit's host (internal/wasmhost), and a guest built
// with nrikit's stub/wasmguest runs on upstream v0.12.5's runtime; both
// adjust a container the same way. Each is synchronized by nrikit's
// runtime with a node of over 1 MiB of pods and containers: the guest on
// upstream's glue, which ignores more, gets it in one request as
// upstream's runtime sends it; nrikit's guest, which declares that it
// handles parts, in parts. The guests are in testdata and are
// built by the tests with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, and
// run by testdata/driver, a program of its own, so that the tests take
// the same time with the race detector (which makes compiling a module
// take minutes) as without.
package wasm
