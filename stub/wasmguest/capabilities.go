package wasmguest

import (
	"context"

	"github.com/nrikit/nrikit/api/capability"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// WithRequiredCapabilities declares capabilities the plugin cannot work
// without, sent with the Configure response: a nrikit runtime that does
// not honour them all for the plugin refuses to load it, naming the
// missing ones (the process stub's stub.WithRequiredCapabilities).
func WithRequiredCapabilities(caps ...capability.Capability) Option {
	return func(c *config) error {
		c.core.RequiredCapabilities = c.core.RequiredCapabilities.Union(capability.NewSet(caps...))
		return nil
	}
}

// Capabilities returns the capabilities the runtime told the plugin at
// Configure, and whether it told any (stub.Stub.Capabilities).
func (g *Guest) Capabilities() (caps capability.Set, ok bool) {
	info := g.s.Plugin().Runtime()
	return info.Capabilities, info.CapabilitiesTold
}

// ToldCapabilities returns, from the context of the plugin's Configure
// handler, the capabilities the runtime told, and whether it told any:
// the same function as stub.ToldCapabilities, for code shared by a
// plugin's process and WASM builds.
func ToldCapabilities(ctx context.Context) (caps capability.Set, ok bool) {
	return pcore.ToldCapabilities(ctx)
}
