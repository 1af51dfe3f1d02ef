package wasmguest

import (
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// The handler interfaces are the stub's (package
// github.com/nrikit/nrikit/stub, handlers.go), found by the collector the
// stub uses (stub/internal/handlers), which matches them by method set:
// the stub itself does not belong in a WASM guest.

type (
	podFunc       = handlers.PodFunc
	containerFunc = handlers.ContainerFunc
)

// collectHandlers finds the handlers plugin implements and the mask of
// the events they cover, with the stub's precedence (an Evicter or OptOut
// variant is used instead of the plain one).
func collectHandlers(plugin any) (handlers.Set, api.EventMask, error) {
	h, events, err := handlers.Collect(plugin)
	if err != nil {
		return h, 0, fmt.Errorf("wasmguest: %w", err)
	}
	return h, events, nil
}
