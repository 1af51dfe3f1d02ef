package adaptation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// splitSync splits pods and containers into Synchronize requests whose
// encoded size does not exceed limit bytes, pods first. Every request
// but the last has More set. An object too large for a request on its
// own travels alone. There is always at least one request.
func splitSync(pods []*api.PodSandbox, ctrs []*api.Container, limit int) []*api.SynchronizeRequest {
	// Room for "more = true" (tag and a one-byte varint).
	budget := limit - 2
	var (
		parts = []*api.SynchronizeRequest{{}}
		size  int
	)
	fit := func(n int) *api.SynchronizeRequest {
		cur := parts[len(parts)-1]
		if size > 0 && size+n > budget {
			cur.More = true
			cur = &api.SynchronizeRequest{}
			parts = append(parts, cur)
			size = 0
		}
		size += n
		return cur
	}
	for _, p := range pods {
		cur := fit(fieldSize(proto.Size(p)))
		cur.Pods = append(cur.Pods, p)
	}
	for _, c := range ctrs {
		cur := fit(fieldSize(proto.Size(c)))
		cur.Containers = append(cur.Containers, c)
	}
	return parts
}

// fieldSize is the encoded size of a length-delimited field (numbers
// below 16) holding n bytes.
func fieldSize(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

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
	// See syncwire.go: parts are encoded ahead for connected plugins.
	parts := p.ep.syncParts(pods, ctrs, MaxSyncMessageSize)
	defer parts.stop()
	// The whole Synchronize has a budget, each part its own timeout.
	bctx, cancelBudget := context.WithTimeout(a.ctx, a.cfg.syncBudget)
	defer cancelBudget()
	var last *api.SynchronizeResponse
	for i := 0; ; i++ {
		req, more, ok, err := parts.next()
		if err != nil {
			return &PluginError{Plugin: p.full, Op: "Synchronize", Kind: FailureRejected, Err: err}
		}
		if !ok {
			break
		}
		ctx, cancel := context.WithTimeout(bctx, a.cfg.syncTimeout)
		// The part's deadline is the budget's when that comes first.
		timeout := a.cfg.syncTimeout
		if dl, _ := bctx.Deadline(); time.Until(dl) < timeout {
			timeout = a.cfg.syncBudget
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
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.requestTimeout)
	failed, err := a.update(ctx, ups, nil)
	cancel()
	switch {
	case err != nil:
		a.log.Warn("applying updates requested in Synchronize", "plugin", p.full, "error", err)
	case len(failed) > 0:
		a.log.Warn("some updates requested in Synchronize failed", "plugin", p.full, "failed", len(failed))
	}
}
