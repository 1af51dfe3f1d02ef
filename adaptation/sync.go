package adaptation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/api"
)

// errSplitSync is a plugin that does not follow the split Synchronize
// protocol.
var errSplitSync = errors.New("plugin does not handle split Synchronize requests (an intermediate answer must echo more=true and carry no updates)")

// synchronize sends the snapshot to p (the pods and containers in its
// scope), part by part, each under the synchronize timeout and all of
// them under the synchronize budget, records the
// opt-out of its last answer, applies the updates it asks for there (of
// containers in its scope; with a SyncFunc, on a goroutine of its own,
// see SyncFunc), and sets up the filter for the events queued
// meanwhile. It runs on p's worker.
func (a *Adaptation) synchronize(p *plugin, pods []*api.PodSandbox, ctrs []*api.Container) error {
	// See wire.SyncParts: parts are encoded ahead for connected plugins.
	parts := p.ep.syncParts(pods, ctrs, MaxSyncMessageSize)
	defer parts.Stop()
	// The whole Synchronize has a budget, each part its own timeout.
	bctx, cancelBudget := context.WithTimeout(a.ctx, a.cfg.limits.SynchronizeBudget)
	defer cancelBudget()
	var last *api.SynchronizeResponse
	for i := 0; ; i++ {
		req, more, ok, err := parts.Next()
		if err != nil {
			return &PluginError{Plugin: p.full, Op: "Synchronize", Kind: FailureRejected, Err: err}
		}
		if !ok {
			break
		}
		ctx, cancel := context.WithTimeout(bctx, a.cfg.limits.SynchronizeTimeout)
		// The part's deadline is the budget's when that comes first.
		timeout := a.cfg.limits.SynchronizeTimeout
		if dl, _ := bctx.Deadline(); time.Until(dl) < timeout {
			timeout = a.cfg.limits.SynchronizeBudget
		}
		start := time.Now()
		rsp, err := p.ep.Synchronize(ctx, req)
		cancel()
		kind := a.classifyErr(p, ctx, err)
		p.observe("Synchronize", time.Since(start), kind)
		if err != nil {
			if a.ctx.Err() != nil {
				return ErrStopped
			}
			perr := &PluginError{Plugin: p.full, Op: "Synchronize", Kind: kind, Timeout: timeout, Err: bounded(kind, err)}
			return fmt.Errorf("part %d: %w", i+1, perr)
		}
		if more && (!rsp.GetMore() || len(rsp.GetUpdate()) > 0) {
			return &PluginError{Plugin: p.full, Op: "Synchronize", Kind: FailureLost, Err: errSplitSync}
		}
		last = rsp
	}
	p.catch = queue.NewCatchUp(pods, ctrs)
	p.takeSyncOptOut(last.GetOptOut(), pods, ctrs)
	p.track.synchronized()
	ups, refused := p.splitUpdates(last.GetUpdate())
	if len(refused) > 0 {
		a.log.Warn("ignoring updates requested in Synchronize of containers outside the plugin's scope",
			"plugin", p.full, "refused", len(refused))
	}
	if len(ups) > 0 && p.currentGrant() != nil {
		ups, _ = p.deniedUpdates("Synchronize", ups, snapshotLookup(pods, ctrs))
	}
	if len(ups) == 0 {
		return nil
	}
	if a.cfg.syncFunc != nil {
		// The runtime's UpdateFunc may take the lock the runtime holds
		// around event calls, and an event call may be waiting for this
		// plugin's worker: apply the updates beside it.
		a.goOwned(func() { a.applySyncUpdates(p, ups) })
		return nil
	}
	a.applySyncUpdates(p, ups)
	return nil
}

// applySyncUpdates applies the updates p asked for in Synchronize.
func (a *Adaptation) applySyncUpdates(p *plugin, ups []*api.ContainerUpdate) {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.limits.RequestTimeout)
	failed, err := a.update(ctx, ups, nil)
	cancel()
	switch {
	case err != nil:
		a.log.Warn("applying updates requested in Synchronize", "plugin", p.full, "error", err)
	case len(failed) > 0:
		a.log.Warn("some updates requested in Synchronize failed", "plugin", p.full, "failed", len(failed))
	}
}
