package stub

import (
	"context"

	"github.com/nrikit/nrikit/api/capability"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// WithRequiredCapabilities declares capabilities (adjustment fields,
// update kinds, evictions; see package api/capability) the plugin cannot work
// without. They are sent with the Configure response (a nrikit
// extension): a nrikit runtime that does not honour them all for the
// plugin refuses its registration, and Start returns the runtime's reason,
// which names the missing ones. An upstream runtime ignores them.
func WithRequiredCapabilities(caps ...capability.Capability) Option {
	return func(c *config) error {
		c.requiredCaps = c.requiredCaps.Union(capability.NewSet(caps...))
		return nil
	}
}

// Capabilities returns the capabilities the runtime told the plugin at
// its last Configure, the ones it honours for this plugin (what it
// applies at all, within the plugin's grant), and whether it told any: an
// older runtime, or upstream's, tells none (ok is false), as before the
// first Configure.
func (st *Stub) Capabilities() (caps capability.Set, ok bool) {
	info := st.c.runtime()
	return info.Capabilities, info.CapabilitiesTold
}

// ToldCapabilities returns, from the context of the plugin's Configure
// handler, the capabilities the runtime told in that Configure request,
// and whether it told any (see [Stub.Capabilities]). It is for handlers
// that cannot reach the Stub, such as a plugin's code shared with its
// WASM build (wasmguest.ToldCapabilities is the same function).
func ToldCapabilities(ctx context.Context) (caps capability.Set, ok bool) {
	return pcore.ToldCapabilities(ctx)
}
