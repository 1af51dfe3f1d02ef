// Package wasmabi defines the WebAssembly plugin ABI (docs/wasm-abi.md)
// once, for both of its sides: the host that loads and calls plugin
// modules (internal/wasmhost) and the guest support plugins are built
// with (stub/wasmguest). It holds the names of the module's exports, the
// API version a module reports and the encoding of a call's answer, and
// imports nothing but package api, so that a guest links next to nothing
// for it.
//
// Go's //go:wasmexport directives cannot name a constant: the guest's
// directives spell the names out (generated from the event table, as the
// events' constants here are), and stub/wasmguest's tests check them
// against [Funcs].
package wasmabi

import "github.com/nrikit/nrikit/api"

// APIVersion is the ABI version a module's plugin_api_version returns and
// the host requires (upstream's PluginPluginAPIVersion).
const APIVersion = 1

// The exports of a module besides the request functions.
const (
	// ExportAPIVersion returns [APIVersion]: () -> i64.
	ExportAPIVersion = "plugin_api_version"
	// ExportMalloc allocates a request buffer in the guest: (size i32) -> ptr i32.
	ExportMalloc = "malloc"
	// ExportFree releases a buffer of the guest: (ptr i32) -> ().
	ExportFree = "free"
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
	// ExportSplitSynchronize is nrikit's optional marker export, () -> (),
	// never called: a module that has it declares that it handles a
	// Synchronize split into parts (every part but the last with more
	// set, answered with more set and no updates), so a nrikit host may
	// send it a large snapshot in parts. A module without it gets its
	// snapshot in one request, as upstream's host sends every module's
	// (upstream's generated glue answers without looking at more).
	ExportSplitSynchronize = "nrikit_split_synchronize"
)

// The host module a guest may import, and its log function:
// (ptr i32, size i32) -> i64, the answer encoded as a request's.
const (
	HostModule = "env"
	HostLog    = "log"
)

// The request functions a module exports, one per request of the Plugin
// service: (ptr i32, size i32) -> i64, the request's protobuf encoding
// in, the answer (see [Answer]) out. An event's is its row of the event
// table (api.EventInfo.WASMExport), which [EventFunc] returns; its
// constant, Func followed by the event's name, is generated from the
// table (events_generated.go) for the guest's //go:wasmexport directives
// and the host's calls.
const (
	FuncConfigure   = "plugin_configure"
	FuncSynchronize = "plugin_synchronize"
	FuncShutdown    = "plugin_shutdown"
	FuncStateChange = "plugin_state_change"
)

// EventFunc returns the request function of event e ("" for an invalid
// event).
func EventFunc(e api.Event) string {
	return e.Info().WASMExport
}

// MethodFunc returns the request function serving the Plugin service
// method named method ("Configure", "CreateContainer", ...), or "" if
// there is none. It looks the name up among the events: a caller that
// calls a method again and again looks its function up once.
func MethodFunc(method string) string {
	switch method {
	case "Configure":
		return FuncConfigure
	case "Synchronize":
		return FuncSynchronize
	case "Shutdown":
		return FuncShutdown
	case "StateChange":
		return FuncStateChange
	}
	for _, e := range api.Events() {
		if e.Name() == method {
			return e.Info().WASMExport
		}
	}
	return ""
}

// Funcs returns the names of every request function a module must
// export, in a fixed order: Configure, Synchronize, Shutdown, the events
// in the order of [api.Events], StateChange.
func Funcs() []string {
	fns := []string{FuncConfigure, FuncSynchronize, FuncShutdown}
	for _, e := range api.Events() {
		fns = append(fns, e.Info().WASMExport)
	}
	return append(fns, FuncStateChange)
}

// IsFunc reports whether fn is the name of a request function.
func IsFunc(fn string) bool {
	switch fn {
	case FuncConfigure, FuncSynchronize, FuncShutdown, FuncStateChange:
		return true
	}
	for e := api.Event_UNKNOWN + 1; e < api.Event_LAST; e++ {
		if e.Info().WASMExport == fn {
			return true
		}
	}
	return false
}

// ErrorBit marks, in the size half of an answer, an answer that is an
// error string instead of the response's encoding.
const ErrorBit = 1 << 31

// MaxAnswerSize is one less than the largest size an answer can carry:
// the size half has 31 bits.
const MaxAnswerSize = ErrorBit - 1

// Answer encodes the answer of a request function: the guest's address
// of the bytes in the high 32 bits, their number in the low 31 and
// [ErrorBit] for an error string. An empty answer is 0 (ptr is ignored),
// or [ErrorBit] for an empty error. size must not exceed [MaxAnswerSize].
func Answer(ptr, size uint32, isError bool) uint64 {
	var v uint64
	if size > 0 {
		v = uint64(ptr)<<32 | uint64(size&MaxAnswerSize)
	}
	if isError {
		v |= ErrorBit
	}
	return v
}

// ParseAnswer decodes an answer encoded by [Answer].
func ParseAnswer(v uint64) (ptr, size uint32, isError bool) {
	ptr, size = uint32(v>>32), uint32(v)
	return ptr, size &^ ErrorBit, size&ErrorBit != 0
}
