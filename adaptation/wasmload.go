package adaptation

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nrikit/nrikit/internal/wasmhost"
)

// Loading WASM plugins costs the runtime memory and CPU that the plugin
// directory's files decide: a module's bytes (read whole), its
// compilation (2.5 s of CPU and a peak of about 115 MB for an 8 MB Go
// guest without a compilation cache) and its instance, whose linear
// memory may grow to the memory limit. The limits bound them all together
// (Limits.MaxConcurrentWASMLoads, WASMLoadTimeout, WASMMemoryBudget): how
// many modules load at once, and how much linear memory the loaded ones
// may reserve.

// wasmLoads bounds the loading of WASM plugins: the turns to load, and
// the memory budget.
type wasmLoads struct {
	once  sync.Once
	turns chan struct{}

	mu       sync.Mutex
	reserved uint64 // bytes of memory limits of the loaded plugins
}

// load loads the WASM plugin l with opts: it reserves the plugin's
// memory limit in the budget, waits for a turn to load, bounded by the
// load timeout, and loads within the load timeout. It returns the module
// and the function that gives its reservation back, once it is closed.
func (a *Adaptation) loadWASM(l launchSpec, opts wasmhost.Options) (*wasmhost.Plugin, func(), error) {
	w := &a.wasm.loads
	unreserve, err := w.reserve(a.cfg.limits.WASMMemoryBudget, wasmMemoryLimit(opts))
	if err != nil {
		return nil, nil, err
	}
	w.once.Do(func() { w.turns = make(chan struct{}, a.cfg.limits.MaxConcurrentWASMLoads) })
	timeout := a.cfg.limits.WASMLoadTimeout
	wait, cancel := context.WithTimeout(a.ctx, timeout)
	defer cancel()
	waited := time.Now()
	select {
	case w.turns <- struct{}{}:
	case <-wait.Done():
		unreserve()
		return nil, nil, fmt.Errorf("waited %v for a turn to load (at most %d WASM plugins load at once): %w",
			time.Since(waited).Round(time.Millisecond), cap(w.turns), wait.Err())
	}
	defer func() { <-w.turns }()
	if d := time.Since(waited); d > time.Second {
		a.log.Info("WASM plugin waited for its turn to load", "plugin", l.full, "waited", d.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(a.ctx, timeout)
	defer cancel()
	mod, err := a.cfg.wasmLoad(ctx, l.path, opts)
	if err != nil {
		unreserve()
		return nil, nil, err
	}
	return mod, unreserve, nil
}

// wasmMemoryLimit returns the memory limit of a plugin loaded with opts,
// in bytes.
func wasmMemoryLimit(opts wasmhost.Options) uint64 {
	pages := opts.MemoryLimitPages
	if pages == 0 {
		pages = wasmhost.DefaultMemoryLimitPages
	}
	return uint64(pages) * wasmPageSize
}

// reserve reserves limit bytes of the budget (0: no budget) and returns
// the function that gives them back (once).
func (w *wasmLoads) reserve(budget, limit uint64) (func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if budget > 0 && w.reserved+limit > budget {
		return nil, fmt.Errorf("its memory limit of %s exceeds what is left of the WASM memory budget (%s of %s)",
			sizeString(limit), sizeString(budget-w.reserved), sizeString(budget))
	}
	w.reserved += limit
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.reserved -= limit
		})
	}, nil
}

// sizeString formats a size in bytes, in MiB or KiB when whole.
func sizeString(n uint64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
