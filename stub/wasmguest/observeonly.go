package wasmguest

import (
	"context"

	"github.com/nrikit/nrikit/api"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// WithObserveOnly declares that the plugin only observes (the process
// stub's stub.WithObserveOnly): a nrikit runtime sends it its events
// without waiting for its answers, and ignores them.
func WithObserveOnly() Option {
	return func(c *config) error {
		c.core.ObserveOnly = true
		return nil
	}
}

// SupportedEvents returns, from the context of the plugin's Configure
// handler, the events the runtime delivers and whether that is known:
// the same function as stub.SupportedEvents, for code shared by a
// plugin's process and WASM builds.
func SupportedEvents(ctx context.Context) (api.EventMask, bool) {
	return pcore.SupportedEvents(ctx)
}
