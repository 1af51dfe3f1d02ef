package adaptation

import (
	"errors"

	nrikit "github.com/nrikit/nrikit/adaptation"

	"github.com/containerd/nri/pkg/adaptation/builtin"
)

// ErrWasmDisabled is upstream's error for a runtime built without WASM
// support, which its New logs and ignores. compat's New does not return
// it either: a runtime built with nrikit's nri_no_wasm tag refuses each
// WASM plugin with the reason, in the log.
var ErrWasmDisabled = errors.New("WASM support is disabled (at build time)")

// WithBuiltinPlugins registers in-process plugins, each under its Index
// and Base name (nrikit's WithBuiltinPlugin).
func WithBuiltinPlugins(plugins ...*builtin.BuiltinPlugin) Option {
	return func(c *options) error {
		for _, p := range plugins {
			c.nrikit = append(c.nrikit, nrikit.WithBuiltinPlugin(p.Index, p.Base, p))
		}
		return nil
	}
}
