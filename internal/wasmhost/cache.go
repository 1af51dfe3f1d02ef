//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"google.golang.org/protobuf/proto"

	nri "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
)

// Cache is what the plugins loaded with it ([Options.Cache]) share: the
// wazero runtimes (one per memory limit) and the compiled modules. A
// module is compiled once per process, and plugins that load the same
// module (the same bytes, with the same memory limit) share its compiled
// form: the second costs an instance, not a compilation and a copy of
// the machine code. With a directory, compiled modules are also kept on
// disk for later processes. A Cache is safe for concurrent use; close it
// after the plugins that use it.
type Cache struct {
	c   wazero.CompilationCache
	dir string

	mu       sync.Mutex
	runtimes map[uint32]*sharedRuntime
	modules  map[moduleKey]*sharedModule
	closed   bool

	// callers maps each live instance (api.Module) to its *Plugin, for
	// env.log.
	callers sync.Map
}

// sharedRuntime is a wazero runtime, made once.
type sharedRuntime struct {
	once sync.Once
	r    wazero.Runtime
	err  error
}

// moduleKey identifies a compiled module: the module's bytes and the
// memory limit (which wazero applies when compiling).
type moduleKey struct {
	sum   [sha256.Size]byte
	limit uint32
}

// sharedModule is a module compiled for the plugins that use it.
type sharedModule struct {
	refs int // guarded by Cache.mu

	mu       sync.Mutex // held while compiling
	compiled wazero.CompiledModule
}

// NewCache returns a Cache, kept in dir as well unless dir is "" (dir is
// created if missing). Its contents are specific to the version of
// wazero; protect dir from other writers.
func NewCache(dir string) (*Cache, error) {
	c := &Cache{dir: dir, runtimes: map[uint32]*sharedRuntime{}, modules: map[moduleKey]*sharedModule{}}
	if dir == "" {
		c.c = wazero.NewCompilationCache()
		return c, nil
	}
	wc, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wasmhost: compilation cache %s: %w", dir, err)
	}
	c.c = wc
	return c, nil
}

// Dir returns the cache's directory, or "".
func (c *Cache) Dir() string { return c.dir }

// runtime returns the runtime for modules with the memory limit limit.
func (c *Cache) runtime(ctx context.Context, limit uint32) (wazero.Runtime, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("wasmhost: compilation cache closed")
	}
	sr := c.runtimes[limit]
	if sr == nil {
		sr = &sharedRuntime{}
		c.runtimes[limit] = sr
	}
	c.mu.Unlock()
	sr.once.Do(func() {
		ctx := context.WithoutCancel(ctx)
		// Close-on-context-done is what bounds a call by its context
		// (an endless loop is stopped). It is also most of a Go
		// guest's call: wazero v1.12 exits from the machine code to
		// Go at every loop header to check for it, and Go compiles
		// every function to a loop (testdata/termcost measures it;
		// wazero issue #2466).
		cfg := wazero.NewRuntimeConfig().
			WithCloseOnContextDone(true).
			WithMemoryLimitPages(limit).
			WithCompilationCache(c.c)
		r := wazero.NewRuntimeWithConfig(ctx, cfg)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
			sr.err = fmt.Errorf("wasmhost: WASI: %w", err)
			return
		}
		if err := c.instantiateEnv(ctx, r); err != nil {
			sr.err = fmt.Errorf("wasmhost: env module: %w", err)
			return
		}
		sr.r = r
	})
	return sr.r, sr.err
}

// compile returns code compiled in r for the memory limit limit, and the
// function that releases it.
func (c *Cache) compile(ctx context.Context, r wazero.Runtime, limit uint32, code []byte) (wazero.CompiledModule, func(context.Context), error) {
	key := moduleKey{sum: sha256.Sum256(code), limit: limit}
	c.mu.Lock()
	sm := c.modules[key]
	if sm == nil {
		sm = &sharedModule{}
		c.modules[key] = sm
	}
	sm.refs++
	c.mu.Unlock()
	release := func(ctx context.Context) {
		c.mu.Lock()
		sm.refs--
		last := sm.refs == 0
		if last && c.modules[key] == sm {
			delete(c.modules, key)
		}
		c.mu.Unlock()
		if last {
			sm.mu.Lock()
			defer sm.mu.Unlock()
			if sm.compiled != nil {
				_ = sm.compiled.Close(ctx)
			}
		}
	}
	sm.mu.Lock()
	if sm.compiled == nil {
		compiled, err := r.CompileModule(ctx, code)
		if err != nil {
			sm.mu.Unlock()
			release(context.WithoutCancel(ctx))
			return nil, nil, err
		}
		sm.compiled = compiled
	}
	compiled := sm.compiled
	sm.mu.Unlock()
	return compiled, release, nil
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
	runtimes := c.runtimes
	c.runtimes, c.modules = nil, nil
	c.mu.Unlock()
	var errs []error
	for _, sr := range runtimes {
		sr.once.Do(func() {}) // wait for a runtime being made
		if sr.r != nil {
			errs = append(errs, sr.r.Close(ctx))
		}
	}
	errs = append(errs, c.c.Close(ctx))
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
		if p, ok := c.callers.Load(m); ok {
			log = p.(*Plugin).log
		}
		b, ok := m.Memory().Read(ptr, size)
		if !ok {
			log.Warn("WASM plugin logged out of its memory", "ptr", ptr, "size", size)
			return
		}
		req := &nri.LogRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			log.Warn("WASM plugin logged an invalid LogRequest", "error", err)
			return
		}
		level := slog.LevelDebug
		switch req.GetLevel() {
		case nri.LogRequest_LEVEL_INFO:
			level = slog.LevelInfo
		case nri.LogRequest_LEVEL_WARN:
			level = slog.LevelWarn
		case nri.LogRequest_LEVEL_ERROR:
			level = slog.LevelError
		}
		log.Log(ctx, level, req.GetMsg(), "stream", "env.log")
	}
	_, err := r.NewHostModuleBuilder(wasmabi.HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(logFn), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).
		WithParameterNames("offset", "size").
		Export(wasmabi.HostLog).
		Instantiate(ctx)
	return err
}
