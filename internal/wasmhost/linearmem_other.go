//go:build !nri_no_wasm && !linux

package wasmhost

import "github.com/tetratelabs/wazero/experimental"

// mappedMemory: guest memories are wazero's default, Go slices.
const mappedMemory = false

// linearMemory is not used without mappings.
type linearMemory struct{}

// unmap does nothing.
func (*linearMemory) unmap() {}

// allocate is not used without mappings.
func (*memGate) allocate(uint64, uint64) experimental.LinearMemory { return nil }
