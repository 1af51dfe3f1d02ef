//go:build !nri_no_wasm && linux

package wasmhost

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mappedMemory: guest memories are mappings of their own (linearMemory).
const mappedMemory = true

// linearMemory is a guest's linear memory in a mapping of its own that
// reserves the memory's maximum, inaccessible, and makes it accessible
// as the memory grows: growth never moves nor copies the memory.
// wazero's default is a Go slice grown by append, which copies the whole
// memory at every growth beyond its capacity (a Go guest's start grows
// it a few dozen times, to tens of MB): each page is faulted in more
// than once, the copies are garbage for the Go heap, and a copy of tens
// of MB runs long enough without a preemption point for the Go runtime
// to signal the thread every 20 µs until it ends.
type linearMemory struct {
	gate   *memGate
	mapped []byte // the whole reservation; nil once unmapped
	usable int    // bytes made accessible, from the start
}

// allocate reserves maximum bytes (at least capacity) for a new memory. If
// the reservation fails, the memory is a Go slice as wazero's default.
func (g *memGate) allocate(capacity, maximum uint64) experimental.LinearMemory {
	size := max(capacity, maximum)
	if size == 0 || size > 1<<32 {
		return &heapMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return &heapMemory{}
	}
	return &linearMemory{gate: g, mapped: b}
}

// Reallocate makes the first size bytes accessible and returns them;
// nil if size exceeds the reservation or the system refuses the pages
// (the guest's memory.grow then fails).
func (m *linearMemory) Reallocate(size uint64) []byte {
	if m.mapped == nil || size > uint64(len(m.mapped)) {
		return nil
	}
	if n := int(size); n > m.usable {
		if err := syscall.Mprotect(m.mapped[m.usable:n], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.usable = n
	}
	// The capacity is the length: an append by wazero after Free (a
	// growth during the call that outlives its module) copies to the
	// Go heap instead of writing past the accessible pages.
	return m.mapped[:size:size]
}

// Free releases the mapping, when no call of the gate's plugin can use
// it any more.
func (m *linearMemory) Free() { m.gate.free(m) }

// unmap releases the mapping (once).
func (m *linearMemory) unmap() {
	if m.mapped == nil {
		return
	}
	_ = syscall.Munmap(m.mapped)
	m.mapped, m.usable = nil, 0
}

// heapMemory is a memory on the Go heap, grown by append as wazero's
// default: the fallback when a reservation fails.
type heapMemory struct{ b []byte }

// Reallocate grows the memory to size bytes.
func (h *heapMemory) Reallocate(size uint64) []byte {
	if n := uint64(len(h.b)); size > n {
		h.b = append(h.b, make([]byte, size-n)...)
	}
	return h.b[:size]
}

// Free drops the memory (the garbage collector frees it).
func (h *heapMemory) Free() { h.b = nil }
