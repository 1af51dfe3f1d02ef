package stub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// dispatcher implements [api.PluginService] for one connection or one
// builtin instance: the core's session serves the requests (scope gate,
// handlers, opt-outs, configuration; see stub/internal/core), and the
// dispatcher adds what only a stub does around three of them.
type dispatcher struct {
	*pcore.Session
	// onConfigured is called with the outcome of each Configure request
	// (nil for builtins).
	onConfigured func(error)
	// onShutdown is called after the Shutdown handler returned (nil for
	// builtins).
	onShutdown func()
	// onSynchronize is called when a Synchronize request arrives (nil
	// for builtins).
	onSynchronize func()
	// gc is applied from the first part of a split Synchronize request
	// on and restored when the last part arrives (nil for builtins); see
	// WithSyncGCPercent.
	gc *syncGC
	// parts are the parts of a split Synchronize request that came
	// before the last.
	parts syncParts
}

var _ api.PluginService = (*dispatcher)(nil)

// newDispatcher returns a dispatcher serving c's plugin on a session of
// its own.
func newDispatcher(c *core) *dispatcher {
	return &dispatcher{Session: c.p.NewSession()}
}

// errAnsweredLate is reported to the registration when the Configure
// request ended (the connection closed or the runtime gave up) before the
// plugin answered it: the answer cannot count.
var errAnsweredLate = errors.New("stub: Configure request ended before the plugin answered it")

// Configure implements [api.PluginService]: the session answers, and
// onConfigured learns the outcome.
func (d *dispatcher) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rsp, err := d.Session.Configure(ctx, req)
	if d.onConfigured != nil {
		outcome := err
		if outcome == nil && ctx.Err() != nil {
			outcome = fmt.Errorf("%w: %w", errAnsweredLate, ctx.Err())
		}
		d.onConfigured(outcome)
	}
	return rsp, err
}

// Synchronize implements [api.PluginService]: a snapshot the runtime had
// to split is large, so the garbage collector is relaxed from its first
// part until every part is decoded (the last arrived), before the
// session hands the snapshot to the handler. A part with more set is
// answered at once and decoded while the runtime sends the next (see
// syncparts.go).
func (d *dispatcher) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	if d.onSynchronize != nil {
		d.onSynchronize()
	}
	decode := deferredPartOf(ctx)
	if req.GetMore() {
		d.gc.begin()
		d.parts.add(req, decode)
		return &api.SynchronizeResponse{More: true}, nil
	}
	parts := d.parts.take()
	err := waitParts(ctx, parts)
	if err == nil && decode != nil {
		if derr := decode(); derr != nil {
			if len(parts) > 0 {
				derr = fmt.Errorf("part %d of %d: %w", len(parts)+1, len(parts)+1, derr)
			}
			err = decodeStatus(derr)
		}
	}
	for _, p := range parts {
		if err != nil {
			break
		}
		_, err = d.Session.Synchronize(ctx, p.req) // collected: more is set
	}
	d.gc.end()
	if err != nil {
		d.Session.DropSynchronize()
		return nil, err
	}
	return d.Session.Synchronize(ctx, req)
}

// Shutdown implements [api.PluginService]: it calls the Shutdown handler,
// then the stub stops.
func (d *dispatcher) Shutdown(ctx context.Context, req *api.Empty) (*api.Empty, error) {
	rsp, err := d.Session.Shutdown(ctx, req)
	if d.onShutdown != nil {
		d.onShutdown()
	}
	return rsp, err
}
