package wasmhost

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// APIVersion is the ABI version a module's plugin_api_version must
// return (upstream's PluginPluginAPIVersion). The ABI's names and
// encoding are defined once, in internal/wasmabi, for the host and the
// guest support (stub/wasmguest).
const APIVersion = wasmabi.APIVersion

// DefaultMemoryLimitPages is the memory limit of a module if
// [Options.MemoryLimitPages] is 0: 2048 pages of 64 KiB, 128 MiB.
const DefaultMemoryLimitPages = 2048

// DefaultMaxMessageSize bounds an answer if [Options.MaxMessageSize] is
// 0: 4 MiB, the largest message NRI carries over a connection.
const DefaultMaxMessageSize = 4 << 20

// The functions a plugin module exports for the requests that are not
// events, all required (see [EventFunc] for the others).
const (
	FuncConfigure   = wasmabi.FuncConfigure
	FuncSynchronize = wasmabi.FuncSynchronize
	FuncShutdown    = wasmabi.FuncShutdown
	FuncStateChange = wasmabi.FuncStateChange
)

// EventFunc returns the export that serves event e's request ("" for an
// invalid event).
func EventFunc(e api.Event) string { return wasmabi.EventFunc(e) }

// Funcs returns the names of every request export a module must have,
// in a fixed order.
func Funcs() []string { return wasmabi.Funcs() }

var (
	// ErrDisabled is returned by Load in a binary built with the tag
	// nri_no_wasm.
	ErrDisabled = errors.New("wasmhost: built without WASM support (build tag nri_no_wasm)")
	// ErrNotWasm is returned (wrapped) by Load for a file that does not
	// start with the WebAssembly magic and version 1.
	ErrNotWasm = errors.New("wasmhost: not a WebAssembly module (no \\0asm magic, version 1)")
	// ErrClosed is returned by calls on a closed Plugin.
	ErrClosed = errors.New("wasmhost: plugin closed")
)

// ExportError is returned by Load for a module without the exports of
// the ABI, or with exports of the wrong signature.
type ExportError struct {
	// Path is the module file.
	Path string
	// Missing are the required exports the module lacks.
	Missing []string
	// Mismatched describe the exports of the wrong signature.
	Mismatched []string
	// Hint says what is likely wrong (such as a module built as a
	// command instead of c-shared), or "".
	Hint string
}

// Error implements the error interface.
func (e *ExportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wasmhost: %s is not an NRI plugin module:", e.Path)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, " missing exports %s;", strings.Join(e.Missing, ", "))
	}
	if len(e.Mismatched) > 0 {
		fmt.Fprintf(&b, " wrong signatures: %s;", strings.Join(e.Mismatched, "; "))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, " %s", e.Hint)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// VersionError is returned by Load for a module whose plugin_api_version
// is not [APIVersion].
type VersionError struct {
	Path    string
	Version uint64
}

// Error implements the error interface.
func (e *VersionError) Error() string {
	return fmt.Sprintf("wasmhost: %s implements WASM plugin API version %d, the host supports %d", e.Path, e.Version, APIVersion)
}

// ErrorKind classifies a [CallError].
type ErrorKind int

const (
	// KindGuest: the guest answered with an error string; its instance
	// is kept.
	KindGuest ErrorKind = iota + 1
	// KindTimeout: the call's context was done before the guest answered.
	KindTimeout
	// KindTrap: the guest trapped or exited (a Go guest exits when it
	// panics outside a handler or runs out of memory).
	KindTrap
	// KindABI: the guest broke the ABI (an answer out of its memory, a
	// failed malloc).
	KindABI
	// KindInit: a fresh instance could not be made or re-initialised.
	KindInit
	// KindOversize: the guest's answer is larger than the call accepts
	// (Err is a *wirelimit.SizeError; the answer was not read), or holds
	// more than the host decodes (Err is a *wirelimit.LimitError, see
	// [Plugin.DecodeAnswer]). The instance is kept: the guest answered
	// within the ABI.
	KindOversize
)

// String returns the kind's name.
func (k ErrorKind) String() string {
	switch k {
	case KindGuest:
		return "guest error"
	case KindTimeout:
		return "timeout"
	case KindTrap:
		return "trap"
	case KindABI:
		return "ABI violation"
	case KindInit:
		return "instantiation"
	case KindOversize:
		return "answer too large"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// CallError is the error of a failed [Plugin.Call] (other than a closed
// plugin or an unknown function).
type CallError struct {
	// Plugin and Func name the plugin and the export called.
	Plugin, Func string
	Kind         ErrorKind
	// Message is the guest's error string, for KindGuest.
	Message string
	// ExitCode is the guest's exit code if it exited (KindTrap).
	ExitCode uint32
	Exited   bool
	// Discarded is true if the instance was discarded: the next call
	// runs on a fresh one.
	Discarded bool
	// Err is the underlying error (nil for KindGuest).
	Err error
}

// Error implements the error interface.
func (e *CallError) Error() string {
	if e.Kind == KindGuest {
		return e.Message
	}
	s := fmt.Sprintf("wasmhost: plugin %s: %s: %s: %v", e.Plugin, e.Func, e.Kind, e.Err)
	if e.Discarded {
		s += " (instance discarded)"
	}
	return s
}

// Unwrap returns the underlying error.
func (e *CallError) Unwrap() error { return e.Err }
