//go:build wasip1

//lint:file-ignore U1000 the functions are exported to the host with //go:wasmexport

package wasmguest

import (
	"fmt"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// The module's state. A c-shared module's exports are package-level
// functions, so what they serve is package-level too: the one exception
// in nrikit to "no global mutable state", set once by Register during
// initialisation, then used by one host call at a time (the host never
// calls a module concurrently).
var (
	// registered is the Guest Register made, or nil.
	registered *Guest
	// registerErr is why Register failed, answered to every request.
	registerErr error
	// allocations keeps the buffers the host allocated with malloc alive
	// until it frees them.
	allocations = map[uint32][]byte{}
	// last is the last answer, kept alive until the host frees it or
	// the next call replaces it.
	last []byte
)

// Register makes plugin the module's plugin; call it from an init
// function of the plugin's main package (a module built with
// -buildmode=c-shared runs its init functions in _initialize, never
// main):
//
//	func init() { wasmguest.Register(&plugin{}, wasmguest.WithScope(scope)) }
//
// The guest's diagnostics go to the host's log through env.log unless an
// option says otherwise. If plugin or an option is invalid, every request,
// Configure first, is answered with the error, so the runtime reports it.
func Register(plugin any, opts ...Option) {
	opts = append([]Option{WithLog(Log)}, opts...)
	g, err := New(plugin, opts...)
	if err != nil {
		registered, registerErr = nil, err
		return
	}
	registered, registerErr = g, nil
}

// Log sends msg to the host's log at level, through the env.log import.
func Log(level api.LogRequest_Level, msg string) {
	b, err := proto.Marshal(&api.LogRequest{Msg: msg, Level: level})
	if err != nil || len(b) == 0 {
		return
	}
	rsp := hostLog(uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b)))
	if ptr, _, _ := wasmabi.ParseAnswer(rsp); ptr != 0 {
		delete(allocations, ptr) // the host's (empty) answer, if it allocated one
	}
	keep(b)
}

//go:wasmimport env log
func hostLog(ptr, size uint32) uint64

// keep keeps b reachable until here.
//
//go:noinline
func keep(b []byte) { _ = b }

//go:wasmexport malloc
func malloc(size uint32) uint32 {
	if size == 0 {
		return 0
	}
	b := make([]byte, size)
	ptr := uint32(uintptr(unsafe.Pointer(&b[0])))
	allocations[ptr] = b
	return ptr
}

//go:wasmexport free
func free(ptr uint32) {
	if len(last) > 0 && ptr == uint32(uintptr(unsafe.Pointer(&last[0]))) {
		last = nil
		return
	}
	delete(allocations, ptr)
}

//go:wasmexport plugin_api_version
func pluginAPIVersion() uint64 { return wasmabi.APIVersion }

// splitSynchronize is never called: its export declares that the guest
// handles Synchronize in parts (wasmabi.ExportSplitSynchronize), which it
// does by gathering them for the handler (core.Session.Synchronize).
//
//go:wasmexport nrikit_split_synchronize
func splitSynchronize() {}

// notRegistered answers every request of a module whose plugin did not
// call Register.
const notRegistered = "wasmguest: no plugin registered (call wasmguest.Register from an init function: a c-shared module does not run main)"

// answer answers a call of export fn with the request at (ptr, size),
// encoded as the ABI says (wasmabi.Answer): the response, or an error
// string.
func answer(fn string, ptr, size uint32) uint64 {
	var req []byte
	if size > 0 {
		req = unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), size)
	}
	if registered == nil {
		msg := notRegistered
		if registerErr != nil {
			msg = registerErr.Error()
		}
		return reply([]byte(msg), true)
	}
	// The host wrote req into a buffer it allocated with malloc and frees
	// after the call, never touching it again: the guest's to keep.
	rsp, err := registered.handle(fn, req, true)
	if err != nil {
		msg := err.Error()
		if msg == "" {
			msg = "wasmguest: handler failed with an empty error"
		}
		return reply([]byte(msg), true)
	}
	return reply(rsp, false)
}

// reply keeps b alive as the answer and encodes its position.
func reply(b []byte, isError bool) uint64 {
	if len(b) > wasmabi.MaxAnswerSize {
		b, isError = []byte(fmt.Sprintf("wasmguest: answer of %d bytes is too large for the ABI", len(b))), true
	}
	last = b
	if len(b) == 0 {
		return wasmabi.Answer(0, 0, isError)
	}
	return wasmabi.Answer(uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b)), isError)
}

// The exports of the requests that are not events; the events' are
// generated from the event table (exports_generated.go).

//go:wasmexport plugin_configure
func pluginConfigure(ptr, size uint32) uint64 { return answer(FuncConfigure, ptr, size) }

//go:wasmexport plugin_synchronize
func pluginSynchronize(ptr, size uint32) uint64 { return answer(FuncSynchronize, ptr, size) }

//go:wasmexport plugin_shutdown
func pluginShutdown(ptr, size uint32) uint64 { return answer(FuncShutdown, ptr, size) }

//go:wasmexport plugin_state_change
func pluginStateChange(ptr, size uint32) uint64 { return answer(FuncStateChange, ptr, size) }
