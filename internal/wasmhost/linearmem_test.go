//go:build !nri_no_wasm && linux

package wasmhost

import (
	"testing"
	"unsafe"
)

// TestLinearMemoryGrowsInPlace: a guest memory grows without moving,
// keeps its bytes, refuses to grow past its reservation, and its
// mapping outlives a Free while the gate is entered.
func TestLinearMemoryGrowsInPlace(t *testing.T) {
	const page = 64 << 10
	g := &memGate{}
	lm, ok := g.allocate(page, 16*page).(*linearMemory)
	if !ok {
		t.Fatal("allocate did not map the memory")
	}
	b := lm.Reallocate(page)
	if len(b) != page {
		t.Fatalf("Reallocate(%d) returned %d bytes", page, len(b))
	}
	b[0], b[page-1] = 1, 2
	grown := lm.Reallocate(4 * page)
	if len(grown) != 4*page || cap(grown) != 4*page {
		t.Fatalf("Reallocate(%d): len %d cap %d", 4*page, len(grown), cap(grown))
	}
	if unsafe.SliceData(grown) != unsafe.SliceData(b) {
		t.Error("the memory moved when it grew")
	}
	if grown[0] != 1 || grown[page-1] != 2 {
		t.Error("the memory lost its bytes when it grew")
	}
	grown[4*page-1] = 3 // the new pages are writable
	if lm.Reallocate(17*page) != nil {
		t.Error("Reallocate past the maximum succeeded")
	}

	g.enter()
	lm.Free()
	if lm.mapped == nil || grown[4*page-1] != 3 {
		t.Fatal("a memory freed while its plugin runs was unmapped")
	}
	g.exit()
	if lm.mapped != nil {
		t.Error("the freed memory was not unmapped when the last user exited")
	}

	idle, _ := g.allocate(page, page).(*linearMemory)
	idle.Reallocate(page)
	idle.Free()
	if idle.mapped != nil {
		t.Error("a memory freed with no user was not unmapped at once")
	}
}
