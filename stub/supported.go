package stub

import (
	"context"

	"github.com/nrikit/nrikit/api"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// SupportedEvents returns, from the context of the plugin's Configure
// handler, the events the runtime delivers (as it advertises them, or as
// its NRI version tells), and whether that is known rather than assumed
// (a runtime of unknown version): a handler can choose its subscription
// by them, as the recorder (nri record) subscribes to CreateContainer
// only where the runtime has no ValidateContainerAdjustment to tell it
// the same.
func SupportedEvents(ctx context.Context) (api.EventMask, bool) {
	return pcore.SupportedEvents(ctx)
}
