//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/nrikit/nrikit/internal/wasmabi"
	"github.com/nrikit/nrikit/internal/wasmfuel"
)

// Cache is what the plugins loaded with it ([Options.Cache]) share: the
// compiled modules, each with its wazero runtime. A module is compiled
// once per process, and plugins that load the same module (the same
// bytes, with the same memory limit) share its compiled form: the second
// costs an instance, not a compilation and a copy of the machine code.
// With a directory, compiled modules are also kept on disk for later
// processes, sealed with the module they were compiled from (see
// cacheseal.go). A Cache is safe for concurrent use; close it after the
// plugins that use it.
type Cache struct {
	// mem is the in-memory compilation cache when there is no dir.
	mem wazero.CompilationCache
	// dir is the on-disk cache's directory, absolute, or "".
	dir string
	// settle is how long an entry must have been unchanged when hashed
	// for its stamp to be sealed: stampSettle (tests shorten it).
	settle time.Duration
	// compiled runs after a module was compiled, not taken from the
	// on-disk cache: releaseCompileMemory (tests count the calls).
	compiled func()

	mu      sync.Mutex
	modules map[moduleKey]*sharedModule
	disks   map[[sha256.Size]byte]*diskModule
	closed  bool

	// callers maps each live instance (api.Module) to its *Plugin, for
	// env.log.
	callers sync.Map
}

// moduleKey identifies a compiled module: the module's bytes, the
// memory limit (which wazero applies when compiling) and how its calls
// are bounded (Options.FuelChecks).
type moduleKey struct {
	sum   [sha256.Size]byte
	limit uint32
	fuel  bool
}

// sharedModule is a module compiled for the plugins that use it, in a
// runtime of its own (the memory limit is the runtime's).
type sharedModule struct {
	refs int         // guarded by Cache.mu
	disk *diskModule // nil without a directory

	mu sync.Mutex // held while compiling
	// runtime and compiled are set under mu and Cache.mu.
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
}

// diskModule is the on-disk cache of one module (all memory limits).
type diskModule struct {
	refs int // sharedModules using it, guarded by Cache.mu

	mu   sync.Mutex // held while its directory is checked, filled and sealed
	seal *seal      // what is sealed, read on first use
	// cc is wazero's cache in the module's directory, set under mu and
	// Cache.mu.
	cc wazero.CompilationCache
}

// NewCache returns a Cache, kept in dir as well unless dir is "". dir
// must pass [CheckCacheDir] (a [*trustedfile.Error] says why not); it
// is created, with mode 0700, if missing. Its contents are specific to
// the version of wazero.
func NewCache(dir string) (*Cache, error) {
	c := &Cache{modules: map[moduleKey]*sharedModule{}, disks: map[[sha256.Size]byte]*diskModule{}, settle: stampSettle,
		compiled: releaseCompileMemory}
	if dir == "" {
		c.mem = wazero.NewCompilationCache()
		return c, nil
	}
	abs, err := prepareCacheDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wasmhost: compilation cache directory: %w", err)
	}
	c.dir = abs
	return c, nil
}

// Dir returns the cache's directory (absolute), or "".
func (c *Cache) Dir() string { return c.dir }

// compile returns code compiled for the memory limit limit and the
// runtime to instantiate it in, and the function that releases them.
// log receives what the on-disk cache has to say.
func (c *Cache) compile(ctx context.Context, log *slog.Logger, limit uint32, fuel bool, code []byte) (wazero.Runtime, wazero.CompiledModule, func(context.Context), error) {
	key := moduleKey{sum: sha256.Sum256(code), limit: limit, fuel: fuel}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, nil, errCacheClosed
	}
	sm := c.modules[key]
	if sm == nil {
		sm = &sharedModule{}
		if c.dir != "" {
			sm.disk = c.disks[key.sum]
			if sm.disk == nil {
				sm.disk = &diskModule{}
				c.disks[key.sum] = sm.disk
			}
			sm.disk.refs++
		}
		c.modules[key] = sm
	}
	sm.refs++
	c.mu.Unlock()
	release := func(ctx context.Context) { c.release(ctx, key, sm) }
	sm.mu.Lock()
	fresh := false
	if sm.compiled == nil {
		var err error
		if fresh, err = c.build(ctx, log, key, sm, code); err != nil {
			sm.mu.Unlock()
			release(context.WithoutCancel(ctx))
			return nil, nil, nil, err
		}
	}
	r, compiled := sm.runtime, sm.compiled
	sm.mu.Unlock()
	if fresh {
		c.compiled() // not under sm.mu: other loads of the module need not wait
	}
	return r, compiled, release, nil
}

// compileWorkers is the number of goroutines compiling one module. With
// one, wazero's default, a compilation ignores its context and runs to
// its end (2.5 s of CPU for an 8 MB Go guest); with two or more wazero
// checks the context between functions, so a load stops within a
// fraction of a second of its deadline or of the runtime's Stop. Two workers
// raise a compilation's peak RSS by about 20 MB (103 to 124 MB for that
// guest, testdata/compilecost) for the same CPU time.
const compileWorkers = 2

// instrumentedFile returns where, in a module's cache directory, the
// module instrumented by internal/wasmfuel is kept (sealed with the
// compiled entries): instrumenting a Go guest costs about 50 ms of a
// start, reading it back a few. The name carries wasmfuel.Version and
// the budget, so a process that instruments differently does not use it.
func instrumentedFile() string {
	return filepath.Join(ownSubdir, fmt.Sprintf("fuel-v%d-budget%d.wasm", wasmfuel.Version, fuelBudget))
}

// errCacheClosed is returned by a Cache used after Close.
var errCacheClosed = errors.New("wasmhost: compilation cache closed")

// build makes sm's runtime and compiles code in it, through the module's
// on-disk cache if there is a directory. It reports whether the module
// was compiled rather than taken from that cache.
func (c *Cache) build(ctx context.Context, log *slog.Logger, key moduleKey, sm *sharedModule, code []byte) (bool, error) {
	cc := c.mem
	if d := sm.disk; d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.cc == nil {
			dir := filepath.Join(c.dir, hex.EncodeToString(key.sum[:]))
			d.seal = openSeal(log, dir, key.sum, c.settle)
			dc, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				return false, fmt.Errorf("wasmhost: compilation cache %s: %w", dir, err)
			}
			c.mu.Lock()
			d.cc = dc
			c.mu.Unlock()
		}
		cc = d.cc
	}
	// The counts first: wazero and wasmfuel read what they vouch for.
	if err := wasmfuel.CheckCounts(code); err != nil {
		return false, fmt.Errorf("invalid module: %w", err)
	}
	r, err := c.newRuntime(ctx, key.limit, key.fuel, cc)
	if err != nil {
		return false, err
	}
	kept := false // code is the instrumented module kept on disk
	if key.fuel {
		if sm.disk != nil {
			var b []byte
			if b, kept = sm.disk.seal.readOwn(log, instrumentedFile()); kept {
				code = b
			}
		}
		if !kept {
			if code, err = wasmfuel.Instrument(code, fuelBudget); err != nil {
				_ = r.Close(context.WithoutCancel(ctx))
				return false, fmt.Errorf("wasmhost: instrumenting the module: %w", err)
			}
		}
	}
	compiled, err := compileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), r, code)
	if err != nil {
		_ = r.Close(context.WithoutCancel(ctx))
		return false, err
	}
	// Without a directory, the module was compiled (or, rarely, found in
	// the in-memory cache, for another memory limit); with one, it was
	// compiled if wazero wrote an entry.
	fresh := true
	if sm.disk != nil {
		if key.fuel && !kept {
			sm.disk.seal.keepOwn(log, instrumentedFile(), code)
		}
		fresh = sm.disk.seal.update(log)
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		sm.runtime, sm.compiled = r, compiled
	}
	c.mu.Unlock()
	if closed {
		_ = r.Close(context.WithoutCancel(ctx))
		return false, errCacheClosed
	}
	return fresh, nil
}

// releaseCompileMemory returns to the system the heap that compiling a
// module has left free. A compilation allocates far more than it keeps:
// for an 8 MB Go guest, about 70 MiB of heap is garbage once it returns,
// and the Go runtime keeps it resident until later collections, which a
// runtime at rest may not run for minutes (it forces one every two). It
// costs one collection (debug.FreeOSMemory) against the seconds of CPU
// of the compilation; a module taken from the on-disk cache allocates
// little and does not pay it.
func releaseCompileMemory() { debug.FreeOSMemory() }

// compileModule compiles code in r. wazero v1.12's validator panics on
// some invalid modules (a function section naming a type out of range,
// when another function calls the function: internal/wasmfuel's fuzz
// test found it); a module file is untrusted, so that is an error here,
// not the end of the process. build has checked the module's counts
// (wasmfuel.CheckCounts) before.
func compileModule(ctx context.Context, r wazero.Runtime, code []byte) (compiled wazero.CompiledModule, err error) {
	defer func() {
		if v := recover(); v != nil {
			compiled, err = nil, fmt.Errorf("invalid module (wazero panicked validating it: %v)", v)
		}
	}()
	return r.CompileModule(ctx, code)
}

// newRuntime makes a runtime with the memory limit limit, compiling
// through cc, with the host modules guests import; with fuel, for
// modules instrumented by internal/wasmfuel.
func (c *Cache) newRuntime(ctx context.Context, limit uint32, fuel bool, cc wazero.CompilationCache) (wazero.Runtime, error) {
	ctx = context.WithoutCancel(ctx)
	// Close-on-context-done is what bounds a call by its context (an
	// endless loop is stopped). It is also most of a Go guest's call:
	// wazero v1.12 exits from the machine code to Go at every loop
	// header to check for it, and Go compiles every function to a loop
	// (testdata/termcost measures it; wazero issue #2466). With fuel,
	// the module's own counters bound the call instead (fuel.go).
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(!fuel).
		WithMemoryLimitPages(limit).
		WithCompilationCache(cc)
	r := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("wasmhost: WASI: %w", err)
	}
	if err := c.instantiateEnv(ctx, r); err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("wasmhost: env module: %w", err)
	}
	if fuel {
		if err := instantiateFuel(ctx, r); err != nil {
			_ = r.Close(ctx)
			return nil, fmt.Errorf("wasmhost: fuel module: %w", err)
		}
	}
	return r, nil
}

// release drops one plugin's reference to the module sm; the last one
// closes its compiled form and runtime, and the module's on-disk cache
// if no other memory limit uses it.
func (c *Cache) release(ctx context.Context, key moduleKey, sm *sharedModule) {
	c.mu.Lock()
	sm.refs--
	if sm.refs > 0 || c.closed {
		c.mu.Unlock()
		return
	}
	delete(c.modules, key)
	r, compiled := sm.runtime, sm.compiled
	var cc wazero.CompilationCache
	if d := sm.disk; d != nil {
		if d.refs--; d.refs == 0 {
			delete(c.disks, key.sum)
			cc = d.cc
		}
	}
	c.mu.Unlock()
	if compiled != nil {
		_ = compiled.Close(ctx)
	}
	if r != nil {
		_ = r.Close(ctx)
	}
	if cc != nil {
		_ = cc.Close(ctx)
	}
}

// Close closes the cache's runtimes (and so every instance still made
// from them) and compiled modules.
func (c *Cache) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var (
		runtimes []wazero.Runtime
		caches   []wazero.CompilationCache
	)
	for _, sm := range c.modules {
		if sm.runtime != nil {
			runtimes = append(runtimes, sm.runtime)
		}
	}
	for _, d := range c.disks {
		if d.cc != nil {
			caches = append(caches, d.cc)
		}
	}
	if c.mem != nil {
		caches = append(caches, c.mem)
	}
	c.modules, c.disks = nil, nil
	c.mu.Unlock()
	var errs []error
	for _, r := range runtimes {
		errs = append(errs, r.Close(ctx))
	}
	for _, cc := range caches {
		errs = append(errs, cc.Close(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wasmhost: closing the compilation cache: %w", err)
	}
	return nil
}

// instantiateEnv defines the host module "env" in r with the log
// function guests import: log(ptr, size i32) -> i64 takes a protobuf
// LogRequest and returns the (empty) response's ptr<<32|size, always 0.
// The message goes to the log of the calling instance's plugin.
func (c *Cache) instantiateEnv(ctx context.Context, r wazero.Runtime) error {
	logFn := func(ctx context.Context, m api.Module, stack []uint64) {
		ptr, size := uint32(stack[0]), uint32(stack[1])
		stack[0] = 0
		log := slog.Default().With("module", m.Name())
		if p := c.caller(ctx, m); p != nil {
			log = p.log
		}
		b, ok := m.Memory().Read(ptr, size)
		if !ok {
			log.Warn("WASM plugin logged out of its memory", "ptr", ptr, "size", size)
			return
		}
		logFromGuest(ctx, log, b)
	}
	_, err := r.NewHostModuleBuilder(wasmabi.HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(logFn), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).
		WithParameterNames("offset", "size").
		Export(wasmabi.HostLog).
		Instantiate(ctx)
	return err
}
