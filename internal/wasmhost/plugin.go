//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	wapi "github.com/tetratelabs/wazero/api"

	"github.com/nrikit/nrikit/internal/wasmabi"
)

// Plugin is a loaded WASM plugin module.
type Plugin struct {
	name     string
	path     string
	log      *slog.Logger
	opts     Options
	cache    *Cache // shared, or the plugin's own (ownCache)
	ownCache bool
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	unref    func(context.Context) // releases compiled
	modCfg   wazero.ModuleConfig
	stdout   *lineWriter
	stderr   *lineWriter
	// splitSync is set if the module declares that it handles
	// Synchronize in parts (see SplitsSynchronize).
	splitSync bool

	// turn is held by the call (or Close) using the instance.
	turn chan struct{}
	// inst is the current instance, nil after one was discarded; it is
	// guarded by turn.
	inst *instance
	// closed is set by Close.
	closed atomic.Bool

	generation atomic.Uint64
	// callCtx is the context of the running call (or load), for the
	// sleeps of a guest with FuelChecks, which wazero does not stop.
	callCtx atomic.Pointer[context.Context]
	// mem keeps the instances' memories mapped while they are used.
	mem memGate
}

// instance is one instantiation of the module.
type instance struct {
	mod          wapi.Module
	malloc, free wapi.Function
	fns          map[string]wapi.Function
}

// Load loads the plugin module at path: it checks that the file is a
// WebAssembly module, compiles it (through the compilation cache of
// opts.CacheDir, if any), checks its exports and makes its first
// instance, whose plugin_api_version must be APIVersion. ctx bounds
// the loading, the compilation and the module's initialisation included
// (only the decoding of the module before its compilation, 0.3 s for an
// 8 MB Go guest, is not interrupted).
func Load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	start := time.Now()
	name := opts.Name
	if name == "" {
		name = filepath.Base(path)
	}
	log := opts.logger().With("plugin", name)
	code, mode, err := readModule(path, opts.maxModuleSize(), opts.TrustedFile)
	if err != nil {
		return nil, err
	}
	if mode&0o111 == 0 {
		log.Info("loading WASM plugin module that is not executable (upstream NRI skips such files)", "path", path, "mode", mode.String())
	}
	p := &Plugin{
		name: name, path: path, log: log, opts: opts,
		stdout: &lineWriter{log: log, level: slog.LevelInfo, stream: "stdout"},
		stderr: &lineWriter{log: log, level: slog.LevelInfo, stream: "stderr"},
		turn:   make(chan struct{}, 1),
	}
	if err := p.setup(ctx, code); err != nil {
		p.release(context.WithoutCancel(ctx))
		return nil, err
	}
	cacheDir := opts.CacheDir
	if opts.Cache != nil {
		cacheDir = opts.Cache.Dir()
	}
	log.Info("loaded WASM plugin", "path", path, "size", len(code), "duration", time.Since(start),
		"memoryLimitPages", opts.memoryLimit(), "cacheDir", cacheDir)
	return p, nil
}

// setup gets the compiled module and its runtime from the cache and
// makes the first instance.
func (p *Plugin) setup(ctx context.Context, code []byte) error {
	switch {
	case p.opts.Cache != nil && p.opts.CacheDir != "":
		return errors.New("wasmhost: Options.Cache and Options.CacheDir both set")
	case p.opts.Cache != nil:
		p.cache = p.opts.Cache
	default:
		cache, err := NewCache(p.opts.CacheDir)
		if err != nil {
			return err
		}
		p.cache, p.ownCache = cache, true
	}
	r, compiled, unref, err := p.cache.compile(ctx, p.log, p.opts.memoryLimit(), p.opts.FuelChecks, code)
	if err != nil {
		return fmt.Errorf("wasmhost: compiling %s: %w", p.path, err)
	}
	p.runtime, p.compiled, p.unref = r, compiled, unref
	if err := checkExports(p.path, compiled); err != nil {
		return err
	}
	p.splitSync = p.declaresSplitSync(compiled)
	p.modCfg = wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithStdout(p.stdout).
		WithStderr(p.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(p.sleeper()).
		WithRandSource(rand.Reader)
	p.setCallContext(ctx)
	inst, err := p.instantiate(ctx)
	if err != nil {
		return err
	}
	p.inst = inst
	return nil
}

// maxSleep is the longest a guest's sleep (WASI poll_oneoff) blocks at a
// time: a host function cannot be interrupted, so a longer sleep returns
// early, the guest sleeps again, and in between wazero notices a call
// whose context is done.
const maxSleep = 10 * time.Millisecond

// sleepSlice sleeps ns nanoseconds, at most maxSleep.
func sleepSlice(ns int64) { time.Sleep(min(time.Duration(ns), maxSleep)) }

// signatures of the ABI's exports.
var (
	sigRequest = signature{params: []wapi.ValueType{wapi.ValueTypeI32, wapi.ValueTypeI32}, results: []wapi.ValueType{wapi.ValueTypeI64}}
	sigVersion = signature{results: []wapi.ValueType{wapi.ValueTypeI64}}
	sigMalloc  = signature{params: []wapi.ValueType{wapi.ValueTypeI32}, results: []wapi.ValueType{wapi.ValueTypeI32}}
	sigFree    = signature{params: []wapi.ValueType{wapi.ValueTypeI32}}
	sigMarker  = signature{}
)

type signature struct{ params, results []wapi.ValueType }

func (s signature) matches(d wapi.FunctionDefinition) bool {
	return bytes.Equal(s.params, d.ParamTypes()) && bytes.Equal(s.results, d.ResultTypes())
}

func (s signature) String() string {
	return fmt.Sprintf("(%s) -> (%s)", typeNames(s.params), typeNames(s.results))
}

func typeNames(ts []wapi.ValueType) string {
	var b bytes.Buffer
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(wapi.ValueTypeName(t))
	}
	return b.String()
}

// checkExports checks that the module exports what the ABI requires.
func checkExports(path string, m wazero.CompiledModule) error {
	want := map[string]signature{wasmabi.ExportAPIVersion: sigVersion, wasmabi.ExportMalloc: sigMalloc, wasmabi.ExportFree: sigFree}
	for _, fn := range Funcs() {
		want[fn] = sigRequest
	}
	have := m.ExportedFunctions()
	e := &ExportError{Path: path}
	for _, fn := range append([]string{wasmabi.ExportAPIVersion, wasmabi.ExportMalloc, wasmabi.ExportFree}, Funcs()...) {
		d, ok := have[fn]
		switch {
		case !ok:
			e.Missing = append(e.Missing, fn)
		case !want[fn].matches(d):
			e.Mismatched = append(e.Mismatched, fmt.Sprintf("%s is %s, want %s", fn,
				signature{params: d.ParamTypes(), results: d.ResultTypes()}, want[fn]))
		}
	}
	if _, ok := m.ExportedMemories()[wasmabi.ExportMemory]; !ok {
		e.Missing = append(e.Missing, wasmabi.ExportMemory)
	}
	_, initialize := have["_initialize"]
	_, start := have["_start"]
	if start && !initialize {
		e.Hint = "the module is a command (exports _start, not _initialize): build it with -buildmode=c-shared"
		if len(e.Missing) == 0 && len(e.Mismatched) == 0 {
			e.Missing = append(e.Missing, "_initialize")
		}
	}
	if len(e.Missing) > 0 || len(e.Mismatched) > 0 {
		return e
	}
	return nil
}

// declaresSplitSync reports whether the module exports the marker
// wasmabi.ExportSplitSynchronize, () -> (); an export of that name with
// another signature declares nothing, and is logged.
func (p *Plugin) declaresSplitSync(m wazero.CompiledModule) bool {
	d, ok := m.ExportedFunctions()[wasmabi.ExportSplitSynchronize]
	if !ok {
		return false
	}
	if !sigMarker.matches(d) {
		p.log.Warn("ignoring the module's export declaring that it handles Synchronize in parts: wrong signature; the snapshot is sent in one request",
			"export", wasmabi.ExportSplitSynchronize, "signature", signature{params: d.ParamTypes(), results: d.ResultTypes()}.String(), "want", sigMarker.String())
		return false
	}
	return true
}

// SplitsSynchronize reports whether the module declares, by exporting
// wasmabi.ExportSplitSynchronize, that it handles a Synchronize split
// into parts (docs/wasm-abi.md, section 6). A module that does not (one
// built on upstream's generated glue) must get its snapshot in one
// request, as upstream's host sends it.
func (p *Plugin) SplitsSynchronize() bool { return p.splitSync }

// MemoryLimit returns the most linear memory an instance may have, in
// bytes.
func (p *Plugin) MemoryLimit() uint64 { return uint64(p.opts.memoryLimit()) * 65536 }

// instantiate makes a fresh instance and checks its API version.
func (p *Plugin) instantiate(ctx context.Context) (*instance, error) {
	p.mem.enter()
	defer p.mem.exit()
	// _initialize runs in InstantiateModule: its env.log calls find the
	// plugin in the context.
	mod, err := p.runtime.InstantiateModule(p.mem.withAllocator(context.WithValue(ctx, callerKey{}, p)), p.compiled, p.modCfg)
	if err != nil {
		p.flush()
		return nil, fmt.Errorf("wasmhost: instantiating %s: %w", p.name, err)
	}
	p.cache.callers.Store(mod, p)
	p.generation.Add(1)
	inst := &instance{
		mod:    mod,
		malloc: mod.ExportedFunction(wasmabi.ExportMalloc),
		free:   mod.ExportedFunction(wasmabi.ExportFree),
		fns:    make(map[string]wapi.Function),
	}
	for _, fn := range Funcs() {
		inst.fns[fn] = mod.ExportedFunction(fn)
	}
	res, err := mod.ExportedFunction(wasmabi.ExportAPIVersion).Call(ctx)
	if err != nil {
		p.closeInstance(ctx, inst)
		return nil, fmt.Errorf("wasmhost: %s: plugin_api_version: %w", p.name, err)
	}
	if res[0] != APIVersion {
		p.closeInstance(ctx, inst)
		return nil, &VersionError{Path: p.path, Version: res[0]}
	}
	return inst, nil
}

// closeInstance closes an instance.
func (p *Plugin) closeInstance(ctx context.Context, inst *instance) {
	p.cache.callers.Delete(inst.mod)
	_ = inst.mod.Close(context.WithoutCancel(ctx))
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.name }

// Generation returns the number of instances made so far: 1 after Load,
// one more for each instance that replaced a discarded one.
func (p *Plugin) Generation() uint64 { return p.generation.Load() }

// flush logs the guest's pending partial output lines.
func (p *Plugin) flush() {
	p.stdout.Flush()
	p.stderr.Flush()
}

// Close closes the plugin's instance, module and runtime. It waits for a
// running call until ctx is done, then closes anyway (the call fails).
// It does not call the plugin's Shutdown: that is the caller's request.
func (p *Plugin) Close(ctx context.Context) error {
	if p.closed.Swap(true) {
		return nil
	}
	select {
	case p.turn <- struct{}{}:
		defer func() { <-p.turn }()
		if p.inst != nil {
			p.closeInstance(ctx, p.inst)
			p.inst = nil
		}
	case <-ctx.Done():
		// The call still running holds the instance; closing the
		// compiled module (or the plugin's own runtime) ends it.
		p.log.Warn("closing WASM plugin during a call", "error", ctx.Err())
	}
	return p.release(context.WithoutCancel(ctx))
}

// release releases the compiled module and closes the plugin's own
// cache.
func (p *Plugin) release(ctx context.Context) error {
	if p.unref != nil {
		p.unref(ctx)
		p.unref = nil
	}
	var err error
	if p.ownCache && p.cache != nil {
		err = p.cache.Close(ctx)
	}
	p.flush()
	if err != nil {
		return fmt.Errorf("wasmhost: closing %s: %w", p.name, err)
	}
	return nil
}
