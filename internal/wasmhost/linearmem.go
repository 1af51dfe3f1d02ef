//go:build !nri_no_wasm

package wasmhost

import (
	"context"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// memGate keeps a plugin's guest memories mapped while the host runs
// guest code or reads guest memory (between enter and exit), and unmaps
// a memory that wazero freed meanwhile once the last user exits.
//
// wazero frees a module's memory when the module is closed, and a
// module can be closed while a call into it runs: by close-on-context-done,
// or by Plugin.Close giving up waiting for a call and closing the runtime.
// A memory of the Go heap outlives such a call (the call's frames keep it
// reachable); a mapping unmapped under a running call would make its
// next access a fatal fault, so its unmapping waits here.
type memGate struct {
	mu      sync.Mutex
	running int
	freed   []*linearMemory // freed while running
}

// enter marks guest code or memory as in use until the matching exit.
func (g *memGate) enter() {
	g.mu.Lock()
	g.running++
	g.mu.Unlock()
}

// exit ends what enter began; the last user out unmaps the memories
// freed meanwhile.
func (g *memGate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.running > 0 {
		return
	}
	for _, m := range g.freed {
		m.unmap()
	}
	g.freed = nil
}

// free unmaps m now, or when the last user exits.
func (g *memGate) free(m *linearMemory) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running > 0 {
		g.freed = append(g.freed, m)
		return
	}
	m.unmap()
}

// withAllocator returns ctx with the allocator of the memories of the
// instances made under it (experimental.WithMemoryAllocator); ctx itself
// where mappings are not supported (wazero's default: a Go slice).
func (g *memGate) withAllocator(ctx context.Context) context.Context {
	if !mappedMemory {
		return ctx
	}
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(g.allocate))
}
