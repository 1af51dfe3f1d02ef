//go:build nri_no_wasm

package wasmhost

import "context"

// Plugin is a loaded WASM plugin module; in a binary built with the tag
// nri_no_wasm none can be loaded.
type Plugin struct{}

// Load returns ErrDisabled: the binary was built with the tag nri_no_wasm.
func Load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	return nil, ErrDisabled
}

// Name returns "".
func (p *Plugin) Name() string { return "" }

// Generation returns 0.
func (p *Plugin) Generation() uint64 { return 0 }

// SplitsSynchronize returns false.
func (p *Plugin) SplitsSynchronize() bool { return false }

// MemoryLimit returns 0.
func (p *Plugin) MemoryLimit() uint64 { return 0 }

// Call returns ErrDisabled.
func (p *Plugin) Call(ctx context.Context, fn string, req []byte) ([]byte, error) {
	return nil, ErrDisabled
}

// Close does nothing.
func (p *Plugin) Close(ctx context.Context) error { return nil }

// Cache is a compilation cache; in a binary built with the tag
// nri_no_wasm there is none.
type Cache struct{}

// NewCache returns ErrDisabled.
func NewCache(dir string) (*Cache, error) { return nil, ErrDisabled }

// Dir returns "".
func (c *Cache) Dir() string { return "" }

// Close does nothing.
func (c *Cache) Close(ctx context.Context) error { return nil }
