package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// callTimeout runs fn with the request timeout and returns its duration.
func (c *pluginCheck) callTimeout(ctx context.Context, fn func(context.Context) error) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	err := fn(cctx)
	d := time.Since(start)
	if c.wasm != nil {
		c.wasm.noteCall(err)
	}
	return d, err
}

func (c *pluginCheck) synchronizeSingle(ctx context.Context) {
	n := min(2, len(c.world.pods))
	req := &api.SynchronizeRequest{Pods: c.world.pods[:n], Containers: c.world.containers[:n]}
	var resp *api.SynchronizeResponse
	d, err := c.callTimeout(ctx, func(ctx context.Context) (err error) {
		resp, err = c.plugin.Synchronize(ctx, req)
		return err
	})
	switch {
	case err != nil:
		c.rec.fail(CheckSyncSingle, d, "%s", describeCallError(err))
	case resp.GetMore():
		c.rec.fail(CheckSyncSingle, d, "answered the only part with more=true")
	default:
		checkUpdates(&c.found, "Synchronize", resp.GetUpdate(), c.world.knownContainers())
		c.rec.pass(CheckSyncSingle, d, "%d pods, %d containers: %d updates", len(req.Pods), len(req.Containers), len(resp.GetUpdate()))
	}
}

func (c *pluginCheck) synchronizeChunked(ctx context.Context) {
	if c.wasm != nil && !c.wasm.plugin.SplitsSynchronize() {
		// Upstream's runtime splits Synchronize only when a request
		// exceeds ttrpc's message limit, which an in-process call never
		// does, and upstream's WASM plugins (its example among them)
		// answer without looking at more: runtimes send such a module its
		// snapshot in one request.
		c.rec.skip(CheckSyncChunked, "not sent: the module does not export %s, so runtimes (upstream's and nrikit's) send it "+
			"its snapshot in one request; a plugin built with nrikit's stub/wasmguest (or compat's RegisterPlugin) exports it "+
			"and handles a split snapshot", wasmabi.ExportSplitSynchronize)
		return
	}
	// One pod and container a part; a part is empty where the plugin's
	// scope left the world fewer objects.
	const parts = syncParts
	var total time.Duration
	for i := 0; i < parts; i++ {
		last := i == parts-1
		req := &api.SynchronizeRequest{More: !last}
		if i < len(c.world.pods) {
			req.Pods, req.Containers = c.world.pods[i:i+1], c.world.containers[i:i+1]
		}
		var resp *api.SynchronizeResponse
		d, err := c.callTimeout(ctx, func(ctx context.Context) (err error) {
			resp, err = c.plugin.Synchronize(ctx, req)
			return err
		})
		total += d
		switch {
		case err != nil:
			c.rec.fail(CheckSyncChunked, total, "part %d of %d: %s", i+1, parts, describeCallError(err))
			return
		case !last && !resp.GetMore():
			c.rec.fail(CheckSyncChunked, total, "answered part %d of %d (more=true) with more=false: the plugin does not handle split requests", i+1, parts)
			return
		case !last && len(resp.GetUpdate()) > 0:
			c.rec.fail(CheckSyncChunked, total, "answered part %d of %d with %d updates; updates belong in the answer to the last part", i+1, parts, len(resp.GetUpdate()))
			return
		case last && resp.GetMore():
			c.rec.fail(CheckSyncChunked, total, "answered the last part with more=true")
			return
		case last:
			checkUpdates(&c.found, "Synchronize (4 parts)", resp.GetUpdate(), c.world.knownContainers())
			c.rec.pass(CheckSyncChunked, total, "%d parts, %d updates", parts, len(resp.GetUpdate()))
		}
	}
}

// delivery is the outcome of sending one event to the plugin.
type delivery struct {
	// resp is the plugin's answer (nil after an error, or through
	// StateChange, whose answer is Empty).
	resp proto.Message
	took time.Duration
	err  error
	// viaStateChange is set if the event went as a StateChangeEvent.
	viaStateChange bool
}

// deliver sends event ev about w's new pod and container to the plugin as
// nrikit's and upstream's runtimes do: with the event's dedicated RPC or,
// for an event of api.StateChangeEvents that the plugin answered
// UNIMPLEMENTED (a plugin built on NRI v0.11 or earlier), as a
// StateChangeEvent, and from then on directly so, as nrikit's runtime
// does. The fallback's call has the request timeout of its own.
func (c *pluginCheck) deliver(ctx context.Context, w *world, ev api.Event) delivery {
	var dl delivery
	if !c.legacy.IsSet(ev) {
		dl.took, dl.err = c.callTimeout(ctx, func(ctx context.Context) (err error) {
			dl.resp, err = w.deliver(ctx, c.plugin, ev, c.inst)
			return err
		})
		if status.Code(dl.err) != codes.Unimplemented || !api.StateChangeEvents.IsSet(ev) {
			return dl
		}
		c.legacy = c.legacy.Set(ev)
	}
	d, err := c.callTimeout(ctx, func(ctx context.Context) error {
		_, err := c.plugin.StateChange(ctx, w.stateChange(ev))
		return err
	})
	return delivery{took: dl.took + d, err: err, viaStateChange: true}
}

func (c *pluginCheck) events(ctx context.Context) {
	known := c.world.knownContainers()
	for _, ev := range lifecycle {
		if !c.subscribed.IsSet(ev) {
			continue
		}
		name := EventCheckName(ev)
		if !c.world.newInScope {
			c.rec.skip(name, "no pod of the checker's is in the plugin's scope %s: nrikit's runtime would send it no events about them", c.scope)
			continue
		}
		dl := c.deliver(ctx, c.world, ev)
		switch {
		case dl.err != nil && dl.viaStateChange:
			c.rec.fail(name, dl.took, "subscribed, but answered UNIMPLEMENTED to %s and %s to StateChange, the fallback of runtimes for plugins of NRI v0.11 and earlier",
				ev.Name(), describeCallError(dl.err))
		case dl.err != nil && status.Code(dl.err) == codes.Unimplemented:
			c.rec.fail(name, dl.took, "subscribed, but answered UNIMPLEMENTED: %s", status.Convert(dl.err).Message())
		case dl.err != nil:
			c.rec.fail(name, dl.took, "%s", describeCallError(dl.err))
		case dl.viaStateChange:
			c.throughStateChange = c.throughStateChange.Set(ev)
			c.rec.pass(name, dl.took, "answered through StateChange")
		default:
			checkAnswer(&c.found, ev, dl.resp, known)
			c.judgeGrant(ev, dl.resp)
			c.rec.pass(name, dl.took, "%s", summarize(dl.resp))
		}
		c.latency = append(c.latency, fmt.Sprintf("%s %s", ev.Name(), formatDuration(dl.took)))
	}
}

// summarize describes an answer in a few words.
func summarize(resp proto.Message) string {
	switch r := resp.(type) {
	case *api.CreateContainerResponse:
		return fmt.Sprintf("adjusts %s; %d updates, %d evictions", adjusted(r.GetAdjust()), len(r.GetUpdate()), len(r.GetEvict()))
	case *api.UpdateContainerResponse:
		return fmt.Sprintf("%d updates, %d evictions", len(r.GetUpdate()), len(r.GetEvict()))
	case *api.StopContainerResponse:
		return fmt.Sprintf("%d updates", len(r.GetUpdate()))
	case *api.ValidateContainerAdjustmentResponse:
		if r.GetReject() {
			return "rejects: " + r.GetReason()
		}
		return "accepts"
	}
	return "answered"
}

// report turns the findings of the answers so far into their checks.
func (c *pluginCheck) report() {
	if len(c.found.malformed) == 0 {
		c.rec.pass(CheckWellFormed, 0, "")
	} else {
		c.rec.fail(CheckWellFormed, 0, "%s", strings.Join(c.found.malformed, "; "))
	}
	if len(c.found.conflicts) == 0 {
		c.rec.pass(CheckConsistent, 0, "")
	} else {
		c.rec.fail(CheckConsistent, 0, "%s", strings.Join(c.found.conflicts, "; "))
	}
	c.reportGrant()
	if old := c.throughStateChange; old != 0 {
		c.rec.info(CheckStateChange, 0, "the plugin has no RPC of its own for %s (it is built on NRI v0.11 or earlier): "+
			"runtimes send these events as StateChange, which upstream's reports as deprecated", old)
	}
	if len(c.latency) == 0 {
		c.rec.info(CheckLatency, 0, "no events delivered")
	} else {
		c.rec.info(CheckLatency, 0, "%s", strings.Join(c.latency, ", "))
	}
}

// probe sends the events the plugin did not subscribe to (informational),
// then checks that the plugin is still there.
func (c *pluginCheck) probe(ctx context.Context) {
	var outcomes []string
	start := time.Now()
	lost := false
	for _, ev := range lifecycle {
		if c.subscribed.IsSet(ev) || !c.cfg.SupportedEvents.IsSet(ev) {
			continue
		}
		dl := c.deliver(ctx, c.world, ev)
		how := ""
		if dl.viaStateChange {
			how = " through StateChange"
		}
		switch {
		case dl.err == nil:
			outcomes = append(outcomes, ev.Name()+": answered"+how)
		case status.Code(dl.err) == codes.Unimplemented:
			outcomes = append(outcomes, ev.Name()+": UNIMPLEMENTED"+how)
		default:
			outcomes = append(outcomes, fmt.Sprintf("%s: %s%s after %s", ev.Name(), describeCallError(dl.err), how, formatDuration(dl.took)))
		}
		if c.isGone() {
			lost = true
			break
		}
	}
	switch {
	case len(outcomes) == 0:
		c.rec.info(CheckProbe, time.Since(start), "subscribed to every event")
		c.rec.pass(CheckStaysUp, 0, "no unsubscribed events to send")
		return
	default:
		c.rec.info(CheckProbe, time.Since(start), "%s", strings.Join(outcomes, ", "))
	}
	if lost || c.isGone() {
		c.rec.fail(CheckStaysUp, 0, "after %s: %s", outcomes[len(outcomes)-1], c.gone())
		return
	}
	first := c.firstSubscribed()
	dl := c.deliver(ctx, c.world, first)
	if dl.err != nil {
		c.rec.fail(CheckStaysUp, dl.took, "%s after the unsubscribed events: %s", first.Name(), describeCallError(dl.err))
		return
	}
	c.rec.pass(CheckStaysUp, dl.took, "%s still answered", first.Name())
}

func (c *pluginCheck) firstSubscribed() api.Event {
	for _, ev := range lifecycle {
		if c.subscribed.IsSet(ev) {
			return ev
		}
	}
	return lifecycle[0]
}

// isGone reports whether the connection is closed or the plugin exited,
// or, for a WASM plugin, whether the last call discarded its instance.
func (c *pluginCheck) isGone() bool {
	if c.wasm != nil {
		return c.wasm.discarded
	}
	select {
	case <-c.sess.done():
		return true
	default:
	}
	return c.proc != nil && c.proc.hasExited()
}

func (c *pluginCheck) shutdown(ctx context.Context) {
	d, err := c.callTimeout(ctx, func(ctx context.Context) error {
		_, err := c.plugin.Shutdown(ctx, &api.Empty{})
		return err
	})
	if err != nil {
		c.rec.fail(CheckShutdown, d, "%s", describeCallError(err))
		return
	}
	c.rec.pass(CheckShutdown, d, "")
}

// closes closes the runtime's end of the socket (for writing: the plugin
// reads EOF) and waits for a launched plugin to exit, or an external one
// to close its end. A plugin may have closed the connection itself after
// Shutdown; then only its exit is awaited.
func (c *pluginCheck) closes(ctx context.Context) {
	start := time.Now()
	closedByPlugin := c.isGone()
	if !closedByPlugin {
		if err := c.sess.closeWrite(); err != nil {
			// The socket may be failing because the plugin closed it
			// just now: the connection is then gone a moment later.
			grace := time.NewTimer(time.Second)
			select {
			case <-c.sess.done():
			case <-grace.C:
			}
			grace.Stop()
			if !c.isGone() {
				c.rec.fail(CheckCloses, 0, "%v", err)
				return
			}
			closedByPlugin = true
		}
	}
	how := "runtime closed the socket"
	if closedByPlugin {
		how = "plugin closed the connection itself"
	}
	timer := time.NewTimer(c.cfg.ExitTimeout)
	defer timer.Stop()
	if c.proc != nil {
		select {
		case <-c.proc.exited:
			desc := "exited with status 0"
			if c.proc.err != nil {
				desc = c.proc.exitDescription()
			}
			c.rec.pass(CheckCloses, time.Since(start), "%s: plugin %s", how, desc)
		case <-timer.C:
			c.rec.fail(CheckCloses, time.Since(start), "%s: plugin still running %s later", how, c.cfg.ExitTimeout)
		case <-ctx.Done():
			c.rec.fail(CheckCloses, time.Since(start), "check cancelled: %v", ctx.Err())
		}
		return
	}
	if closedByPlugin {
		c.rec.pass(CheckCloses, time.Since(start), "plugin closed the connection itself")
		return
	}
	select {
	case <-c.sess.done():
		c.rec.pass(CheckCloses, time.Since(start), "plugin closed its end of the connection")
	case <-timer.C:
		c.rec.fail(CheckCloses, time.Since(start), "plugin kept the connection open %s after the runtime closed the socket", c.cfg.ExitTimeout)
	case <-ctx.Done():
		c.rec.fail(CheckCloses, time.Since(start), "check cancelled: %v", ctx.Err())
	}
}
