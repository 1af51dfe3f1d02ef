package adaptation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"google.golang.org/protobuf/proto"
)

// WASM plugins are files of the plugin directory named IDX-NAME that
// hold a WebAssembly module (upstream NRI's ABI, docs/wasm-abi.md). They
// run in-process, one wazero instance each, behind the same endpoint
// interface as every other plugin: ordering, scopes, opt-outs, failure
// policies, metrics, validation and configuration files apply unchanged.
// Unlike a launched plugin, a WASM plugin does not register: its index
// and name are its file's, and its subscription is its Configure answer's
// events (none: all of them).

// WithWASMCacheDir sets the directory of the on-disk compilation cache of
// WASM plugins (created, mode 0700, if missing): a module compiled once,
// by this process or an earlier one, loads from there without being
// compiled again (a Go guest: about 0.2 s instead of several seconds).
// "" (the default) keeps compiled modules in memory only; plugins loading
// the same module share its compiled form either way.
//
// The runtime runs the machine code it finds in dir, so dir must be its
// own: not a symbolic link, owned by root or the effective user, not
// writable by its group or others, and the same for every directory
// above it (one writable by others only if sticky, as /tmp). A directory
// that breaks a rule (such as a user's ~/.cache under sudo -E) is not
// used: the runtime logs why, at warning level, and keeps compiled
// modules in memory. Each module's entries are sealed with the module
// they were compiled from; an entry that does not match (copied from
// another module's) is deleted and the module compiled again
// (docs/wasm-abi.md, section 9).
func WithWASMCacheDir(dir string) Option {
	return func(c *config) error { c.wasmCacheDir = dir; return nil }
}

// WithWASMContextChecks bounds the calls into WASM plugins the way
// wazero does by itself (close-on-context-done: the machine code returns
// to Go at every loop header to look at the call's context) instead of by
// counters the module is instrumented with at load (internal/wasmfuel:
// the host looks every 65,536 loop headers and function entries). Both
// stop a guest that loops within the request timeout; the counters cost
// about a third as much of a Go guest's time (docs/benchmarks.md,
// "Bounding a call"). It is the fallback for a module the instrumentation
// refuses.
func WithWASMContextChecks() Option {
	return func(c *config) error { c.wasmCtxChecks = true; return nil }
}

// wasmRuntime is the Adaptation's compilation cache of WASM plugins,
// made when the first one loads and closed by Stop, and the bounds of
// their loading (wasmload.go).
type wasmRuntime struct {
	mu     sync.Mutex
	cache  *wasmhost.Cache
	closed bool

	loads wasmLoads
}

// get returns the cache, making it in dir on first use; a directory
// refused by its checks is logged, and the cache kept in memory.
func (w *wasmRuntime) get(dir string, log *slog.Logger) (*wasmhost.Cache, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return nil, ErrStopped
	case w.cache != nil:
		return w.cache, nil
	}
	c, err := wasmhost.NewCache(dir)
	if trustedfile.IsUntrusted(err) {
		log.Warn("not using the WASM compilation cache directory: compiled modules are kept in memory only", "dir", dir, "error", err)
		c, err = wasmhost.NewCache("")
	}
	if err != nil {
		return nil, err
	}
	w.cache = c
	return c, nil
}

// close closes the cache; later gets fail.
func (w *wasmRuntime) close(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.cache == nil {
		return nil
	}
	return w.cache.Close(ctx)
}

// permanentError is a load failure that loading again cannot cure (no
// WASM support built in, a module that is not an NRI plugin): the
// supervisor gives up on the plugin.
type permanentError struct{ error }

// Unwrap returns the failure.
func (e permanentError) Unwrap() error { return e.error }

// isPermanent reports whether err is a permanentError.
func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// wasmEndpoint is a WASM plugin: calls go to its module's exports, the
// requests and answers encoded as on a connection. The module discards
// an instance that crashed; the next call gets a fresh one, to which the
// plugin's Configure request is replayed first (not Synchronize: a
// plugin that keeps state about pods in its memory should not be kept
// after a crash, see FailureCrashed).
type wasmEndpoint struct {
	*wasmhost.Client
	mod   *wasmhost.Plugin
	grace time.Duration
	// unreserve gives the plugin's memory back to the budget.
	unreserve func()
	// configure is the encoding of the plugin's Configure request.
	configure atomic.Pointer[[]byte]

	done chan struct{}
	once sync.Once
	err  error
}

// Configure sends the request and keeps its encoding for fresh
// instances.
func (e *wasmEndpoint) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	buf, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the Configure request: %w", err)
	}
	e.configure.Store(&buf)
	out, err := e.mod.Call(ctx, wasmhost.FuncConfigure, buf)
	if err != nil {
		return nil, err
	}
	rsp := &api.ConfigureResponse{}
	if err := e.mod.DecodeAnswer("Configure", out, rsp); err != nil {
		return nil, err
	}
	return rsp, nil
}

// reinit replays the Configure request on a fresh instance.
func (e *wasmEndpoint) reinit(ctx context.Context, call func(context.Context, string, []byte) ([]byte, error)) error {
	buf := e.configure.Load()
	if buf == nil {
		return nil
	}
	if _, err := call(ctx, wasmhost.FuncConfigure, *buf); err != nil {
		return fmt.Errorf("replaying Configure: %w", err)
	}
	return nil
}

// call encodes req (with what sh shares, as a connection does) and calls
// the export serving m (m.wasm).
func (e *wasmEndpoint) call(ctx context.Context, m *method, req proto.Message, sh *wire.Shared) (proto.Message, error) {
	enc, buf, err := sh.Encode(req)
	if err != nil {
		return nil, err
	}
	rsp := m.answer.New().Interface()
	if enc != nil {
		err = e.mod.CallEncoded(ctx, m.wasm, enc, rsp)
	} else {
		err = e.mod.CallMessage(ctx, m.wasm, req, rsp)
	}
	// The request's bytes were copied into the guest's memory.
	buf.Free()
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// Synchronize sends req, unless it is more than half the plugin's
// memory limit: the guest could hold neither it and what it decodes
// from it, so it is refused without touching the guest
// (*wasmSyncSizeError, the plugin's FailureOversize). If the guest
// crashes on a snapshot sent whole, the error says so.
func (e *wasmEndpoint) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	buf, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the Synchronize request: %w", err)
	}
	whole := !e.mod.SplitsSynchronize()
	if limit := e.mod.MemoryLimit(); uint64(len(buf)) > limit/2 {
		return nil, &wasmSyncSizeError{Size: uint64(len(buf)), MemoryLimit: limit, Whole: whole}
	}
	rsp := &api.SynchronizeResponse{}
	err = e.mod.CallEncoded(ctx, wasmhost.FuncSynchronize, buf, rsp)
	var call *wasmhost.CallError
	if whole && errors.As(err, &call) && call.Kind == wasmhost.KindTrap {
		err = fmt.Errorf("given the snapshot whole, %s in one request, as the module does not declare that it handles Synchronize in parts: %w",
			sizeString(uint64(len(buf))), err)
	}
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// wasmSyncSizeError is a Synchronize request too large for a WASM
// plugin's memory.
type wasmSyncSizeError struct {
	// Size is the request's encoded size, MemoryLimit the plugin's, in
	// bytes.
	Size, MemoryLimit uint64
	// Whole is set if the request is the whole snapshot: the module does
	// not declare that it handles Synchronize in parts.
	Whole bool
}

// Error says what is too large, and what can be done.
func (e *wasmSyncSizeError) Error() string {
	what := "a part of the snapshot (one object too large to share a part)"
	if e.Whole {
		what = "the snapshot, in one request as the module does not declare that it handles Synchronize in parts (docs/wasm-abi.md, section 6),"
	}
	return fmt.Sprintf("%s is %s, more than half of the plugin's WASM memory limit of %s: the guest could not hold it and what it decodes from it (raise the limit, WithWASMMemoryLimit)",
		what, sizeString(e.Size), sizeString(e.MemoryLimit))
}

// failure maps the module's errors: a guest's error string is its
// answer; an answer above its bounds, or a Synchronize request above
// the guest's memory, is oversize; a trap, exit, ABI
// violation, failed re-initialisation or undecodable answer is a crash; a
// closed module is a lost plugin.
func (e *wasmEndpoint) failure(err error) FailureKind {
	var (
		call   *wasmhost.CallError
		decode *wasmhost.DecodeError
		size   *wasmSyncSizeError
	)
	switch {
	case errors.As(err, &size):
		return FailureOversize
	case errors.Is(err, wasmhost.ErrClosed):
		return FailureLost
	case errors.As(err, &call) && call.Kind == wasmhost.KindGuest:
		return FailureRejected
	case errors.As(err, &call) && call.Kind == wasmhost.KindTimeout:
		return FailureTimeout
	case errors.As(err, &call) && call.Kind == wasmhost.KindOversize:
		return FailureOversize
	case errors.As(err, &call), errors.As(err, &decode):
		return FailureCrashed
	}
	return FailureRejected
}

// syncParts returns the parts of wire.SplitSync for a module that declares
// it handles Synchronize in parts (nrikit's guest does), else the whole
// snapshot in one request, as upstream's runtime sends it to every WASM
// plugin: a guest on upstream's generated glue answers without looking
// at more, so a part would be all it saw. They are encoded, not shared,
// so the objects need no copy.
func (e *wasmEndpoint) syncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *wire.SyncParts {
	if e.mod.SplitsSynchronize() {
		return wire.PlainSyncParts(pods, ctrs, limit)
	}
	return wire.ListedSyncParts([]*api.SynchronizeRequest{{Pods: pods, Containers: ctrs}})
}

// configured does nothing: every call is bounded by its context.
func (e *wasmEndpoint) configured(time.Duration) {}

// Done is closed by Close.
func (e *wasmEndpoint) Done() <-chan struct{} { return e.done }

// Close closes the module: a call still running gets the termination
// grace to finish, then is stopped.
func (e *wasmEndpoint) Close() error {
	e.once.Do(func() {
		close(e.done)
		if e.mod == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.grace)
		defer cancel()
		e.err = e.mod.Close(ctx)
		e.unreserve()
	})
	return e.err
}
