package adaptation

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Dispatch: how an event reaches its plugins and how their answers come
// back. invoke is the one call to one plugin; mutate walks the plugins of
// a mutating event one after the other, gather hands an event to all of
// them at once (notifications, validation); accept is the one step every
// used answer passes before the dispatcher takes it in.

// invoke makes one call to one plugin. It is the single path of every
// event to every plugin: request timeout, StateChange fallback, metrics,
// failure classification, logging and the disconnecting half of the
// failure policy. It runs on p's worker, or on the dispatcher that took
// the turn from it (queue.Slot.TakeTurn). sh is what req has in common
// with the requests of the event to the other plugins (see wire.Shared). A
// non-nil error is a *PluginError, ctx's error if the runtime gave up
// first, or a *wire.RequestSizeError if req was too large to send.
func invoke[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], req Req, sh *wire.Shared) (Rsp, error) {
	var zero Rsp
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	start := time.Now()
	var (
		rsp Rsp
		err error
	)
	if r.has(viaStateChange) && p.legacy[r.event].Load() {
		_, err = p.ep.call(rctx, methodStateChange, r.stateChange(req), nil)
	} else {
		rsp, err = send[Rsp](rctx, p.ep, r.method, req, sh)
		if err != nil && r.has(viaStateChange) && status.Code(err) == codes.Unimplemented {
			if !p.legacy[r.event].Swap(true) {
				p.a.log.Warn("plugin does not implement a dedicated RPC, using StateChange",
					"plugin", p.full, "event", r.event.Name())
				p.a.deprecatedStateChange(ctx, p.full, r.event)
			}
			rsp = zero
			_, err = p.ep.call(rctx, methodStateChange, r.stateChange(req), nil)
		}
	}
	if err != nil {
		if _, tooLarge := wire.RequestSize(err); tooLarge {
			return zero, err // not sent: nothing of the plugin's to judge
		}
	}
	kind := p.a.classifyErr(p, rctx, err)
	took := time.Since(start)
	p.observe(r.event.Name(), took, kind)
	if p.a.log.Enabled(ctx, slog.LevelDebug) {
		p.a.log.DebugContext(ctx, "plugin answered", "plugin", p.full, "event", r.event.Name(), "took", took, "error", err)
	}
	if err == nil {
		observe(ctx, p, r.event, req, rsp, nil, took)
		return rsp, nil
	}
	if ctx.Err() != nil {
		observe(ctx, p, r.event, req, zero, ctx.Err(), took)
		return zero, ctx.Err()
	}
	perr := &PluginError{Plugin: p.full, Op: r.event.Name(), Kind: kind, Timeout: p.timeout, Err: bounded(kind, err)}
	p.onFailure(perr)
	observe(ctx, p, r.event, req, zero, error(perr), took)
	return zero, perr
}

// classifyErr says how a call that ended with err under rctx failed (0
// for no failure).
func (a *Adaptation) classifyErr(p *plugin, rctx context.Context, err error) FailureKind {
	if err == nil {
		return 0
	}
	if isOversize(err) {
		// The answer arrived, and was refused for what it is, even if the
		// deadline passed meanwhile.
		return FailureOversize
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		status.Code(err) == codes.DeadlineExceeded {
		return FailureTimeout
	}
	if errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, ttrpc.ErrServerClosed) ||
		errors.Is(err, ttrpc.ErrProtocol) || errors.Is(err, errPluginGone) {
		return FailureLost
	}
	select {
	case <-p.ep.Done():
		return FailureLost
	default:
	}
	return p.ep.failure(err)
}

// onFailure logs a plugin's failure and applies the disconnecting half of
// its failure policy: a lost plugin is disconnected, a plugin that timed
// out or crashed unless its policy keeps it connected. (Whether the
// request fails is the dispatcher's decision, see failsRequest.)
func (p *plugin) onFailure(perr *PluginError) {
	switch perr.Kind {
	case FailureTimeout:
		if p.policy.keepConnected {
			p.a.log.Error("plugin timed out, keeping it connected", "plugin", p.full, "event", perr.Op, "timeout", p.timeout)
			return
		}
		p.a.log.Error("plugin timed out, disconnecting it", "plugin", p.full, "event", perr.Op, "timeout", p.timeout)
		p.disconnect("timed out handling " + perr.Op)
	case FailureLost:
		p.a.log.Error("plugin lost", "plugin", p.full, "event", perr.Op, "error", perr.Err)
		p.disconnect("lost during " + perr.Op)
	case FailureCrashed:
		if p.policy.keepConnected {
			p.a.log.Error("plugin crashed, keeping it (its next call gets a fresh instance)", "plugin", p.full,
				"event", perr.Op, "error", perr.Err)
			return
		}
		p.a.log.Error("plugin crashed, dropping it", "plugin", p.full, "event", perr.Op, "error", perr.Err)
		p.disconnect("crashed during " + perr.Op)
	case FailureOversize:
		p.a.log.Error("plugin answer too large, not using it", "plugin", p.full, "event", perr.Op, "error", perr.Err)
	case FailureDenied:
		p.log.Warn("plugin's changes denied by the policy", "event", perr.Op, "error", perr.Err)
	case FailureSynchronizing:
		p.a.log.Warn("plugin still synchronizing, event proceeds without waiting for it", "plugin", p.full,
			"event", perr.Op, "waited", perr.Timeout)
	default:
		p.a.log.Warn("plugin failed request", "plugin", p.full, "event", perr.Op, "error", errorMessage(perr.Err))
	}
}

// outcome is one plugin's answer to an event, or why there is none.
type outcome[Rsp any] struct {
	rsp Rsp
	err error
}

// deliverEvent makes the call of an event to p, unless skip says why not, and
// records an opt-out in the answer before the next event for p starts.
func deliverEvent[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject, req Req, sh *wire.Shared, skip error) outcome[Rsp] {
	if skip != nil {
		return outcome[Rsp]{err: skip}
	}
	rsp, err := invoke(ctx, p, r, req, sh)
	if err == nil {
		p.takeOptOut(r.event, s, rsp)
	}
	return outcome[Rsp]{rsp, err}
}

// reserveHooks are what a dispatcher adds to the picking of its plugins,
// under the registry lock (see reserve). Only CreateContainer has any: it
// checks that the required plugins are there, and notes the plugins it
// does not call, for its validators.
type reserveHooks struct {
	// check, if set, can refuse the event before plugins are picked.
	check func() error
	// skipped, if set, is told of every subscribed plugin not picked
	// because the subject is outside its scope or it opted out of it.
	skipped func(*plugin)
	// required are the plugins the event requires by name (required.go):
	// their failure fails the event (judge).
	required *requiredSet
}

// mutate delivers a mutating event about s to its subscribed plugins one
// after the other, in invocation order. next builds the request for a
// plugin from the result so far (the endpoints encode what the requests
// have in common once, see wire.Shared); each answer passes accept, then fold
// takes it in. The first error ends the walk and is returned, except for
// an event marked tellAll: there the walk goes on to every plugin and the
// first error is returned at its end.
func mutate[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject,
	hooks reserveHooks, next func(*plugin) Req, fold func(*plugin, Rsp) error) error {
	res, err := a.reserve(r.event, s, hooks, true)
	if err != nil {
		return err
	}
	sh := newShared()
	var first error // of a tellAll event
	for i, p := range res.plugins {
		o, done := callInTurn(ctx, p, r, s, res.slots[i], res.catchUp[i], next(p), sh)
		if !done {
			res.release(i + 1)
			return ctx.Err()
		}
		use, err := accept(ctx, p, r, s, hooks.required, o)
		if err == nil && use {
			err = fold(p, o.rsp)
		}
		switch {
		case err == nil:
		case r.has(tellAll):
			if first == nil {
				first = err
			}
		default:
			res.release(i + 1)
			return err
		}
	}
	// A tellAll event goes on whatever its plugins answered (a container
	// is stopped even if a plugin failed its StopContainer): its
	// observers are told of it too.
	if res.observed() {
		deliverObservers(ctx, a, r, s, res, next(res.observers[0].p), sh)
	}
	return first
}

// callInTurn makes the call of a mutating event to p, whose slot sl was
// reserved for it, once the plugins before p have answered. It saves the
// goroutine hand-offs where it can: a slot lent at reserve time (the
// worker was idle and is not woken) or one the worker waits at
// (queue.Slot.TakeTurn) is run on the dispatcher's goroutine; otherwise
// the call is handed to the worker and awaited (see turn.handOver), and
// delivered late if the dispatcher stops waiting for a plugin that
// synchronizes. ok is false if ctx ended first.
func callInTurn[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject,
	sl *queue.Slot, catchUp bool, req Req, sh *wire.Shared) (o outcome[Rsp], ok bool) {
	if sl.Lent() {
		skip := p.verdict(sl)
		o = deliverEvent(ctx, p, r, s, req, sh, skip)
		p.q.GiveBack(sl)
		if skip == errOptedOut {
			p.skipped(r.event, optedOut)
		}
		return o, true
	}
	if skip, taken := sl.TakeTurn(); taken {
		if skip == nil && p.isGone() {
			skip = errPluginGone
		}
		o = deliverEvent(ctx, p, r, s, req, sh, skip)
		sl.Finish()
		return o, true
	}
	t := &turn[Req, Rsp]{ctx: ctx, p: p, r: r, s: s, req: req, sh: sh, late: true}
	t.handOver(sl)
	return t.await(catchUp)
}

// gather delivers req to every plugin of res (reserved without lending)
// at once, each call on its plugin's worker, and waits for the outcomes
// in invocation order. Each outcome passes accept, and an answer to be
// used goes to use; the first error of either is returned once every
// plugin has answered, ctx's error as soon as ctx ends. With use nil
// nothing is judged: the plugins' failures are logged (see invoke), never
// returned (notifications).
//
// A plugin that was synchronizing when the event started is, with
// waitCatchUp, waited for at most the synchronize wait: if its turn has
// not come by then, the event goes on without it (FailureSynchronizing)
// and it does not get the event. Without waitCatchUp it is not waited
// for: it gets the event when its turn comes, bounded by its request
// timeout and Stop only.
func gather[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject,
	res *reservation, req Req, waitCatchUp bool, use func(*plugin, Rsp) error) error {
	// The connected plugins' endpoints encode the request once for all
	// of them.
	sh := newShared()
	deliverObservers(ctx, a, r, s, res, req, sh)
	turns := make([]turn[Req, Rsp], len(res.plugins))
	for i, p := range res.plugins {
		if res.catchUp[i] && !waitCatchUp {
			// Delivered after the runtime's call returned.
			dctx, cancel := a.detach(ctx)
			res.slots[i].Fill(func(skip error) {
				defer cancel()
				deliverEvent(dctx, p, r, s, req, sh, skip)
			})
			continue
		}
		turns[i] = turn[Req, Rsp]{ctx: ctx, p: p, r: r, s: s, req: req, sh: sh}
		turns[i].handOver(res.slots[i])
	}
	var first error
	for i, p := range res.plugins {
		if turns[i].done == nil {
			continue // not waited for
		}
		o, done := turns[i].await(res.catchUp[i])
		if !done {
			return ctx.Err()
		}
		if use == nil {
			continue
		}
		ok, err := accept(ctx, p, r, s, nil, o)
		if err == nil && ok {
			err = use(p, o.rsp)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// notify delivers a notification about s to every subscribed plugin for
// which s is in scope, concurrently (each plugin in its own order of
// events) and waits until the plugins that are active have handled it or
// ctx ends; plugins still synchronizing get it later. Failures are
// logged, never returned.
func notify[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject, req Req) error {
	res, err := a.reserve(r.event, s, reserveHooks{}, false)
	if err != nil {
		a.log.Debug("event not delivered", "event", r.event.Name(), "error", err)
		return nil
	}
	_ = gather(ctx, a, r, s, res, req, false, nil)
	return nil
}

// turn is one plugin's call of an event, handed to the plugin's worker:
// the call, the way back of its outcome, and the decision whether it runs
// for the dispatcher that waits for it.
type turn[Req, Rsp proto.Message] struct {
	ctx context.Context
	p   *plugin
	r   *rpc[Req, Rsp]
	s   subject
	req Req
	sh  *wire.Shared
	// late, if set, delivers the event even if the dispatcher stopped
	// waiting before the call started (mutating events, see deliverLate).
	late bool

	// o is the outcome, set before done is closed.
	o    outcome[Rsp]
	done chan struct{}
	h    handoff
}

// handOver fills sl with the call, for the plugin's worker to make in its
// order of events. Its outcome comes back to the dispatcher (see await),
// unless the dispatcher stopped waiting before it started.
func (t *turn[Req, Rsp]) handOver(sl *queue.Slot) {
	t.done = make(chan struct{})
	sl.Fill(t.work)
}

// work is what the worker runs for the turn.
func (t *turn[Req, Rsp]) work(skip error) {
	if !t.h.start() {
		if t.late {
			deliverLate(t.ctx, t.p, t.r, t.s, t.req, t.sh, skip)
		}
		return
	}
	t.o = deliverEvent(t.ctx, t.p, t.r, t.s, t.req, t.sh, skip)
	close(t.done)
}

// handoff decides, once, whether a work filled into a slot runs for the
// dispatcher that waits for it, or late, after the dispatcher stopped
// waiting (see turn.await).
type handoff struct{ state atomic.Int32 }

// start reports whether the work runs for its dispatcher; after it the
// dispatcher can no longer give up on it.
func (h *handoff) start() bool { return h.state.CompareAndSwap(0, 1) }

// abandon reports whether the dispatcher gave up before the work started.
func (h *handoff) abandon() bool { return h.state.CompareAndSwap(0, 2) }

// await waits for the outcome of the call handed to the plugin's worker.
// For a plugin that was synchronizing when the event started (catchUp),
// the wait is bounded by the synchronize wait: if the call has not
// started by then, the dispatcher gives up on it (see work) and the
// outcome is a FailureSynchronizing. A call that has started is bounded
// by the plugin's request timeout. ok is false if the turn's context
// ended first.
func (t *turn[Req, Rsp]) await(catchUp bool) (o outcome[Rsp], ok bool) {
	p, a := t.p, t.p.a
	var expired <-chan time.Time // nil: no bound
	if catchUp {
		tm := time.NewTimer(a.cfg.limits.SynchronizeWait)
		defer tm.Stop()
		expired = tm.C
	}
	for {
		select {
		case <-t.done:
			return t.o, true
		case <-t.ctx.Done():
			return o, false
		case <-expired:
			if t.h.abandon() {
				return outcome[Rsp]{err: p.fail(&PluginError{Plugin: p.full, Op: t.r.event.Name(),
					Kind: FailureSynchronizing, Timeout: a.cfg.limits.SynchronizeWait})}, true
			}
			expired = nil // the call has started: its own timeout bounds it
		}
	}
}

// deliverLate delivers a mutating event to a plugin whose dispatcher gave
// up waiting for it while it synchronized (see turn.await): the plugin
// still sees the event, so that it knows every object, but its answer is
// not used. The call is not bounded by the runtime's context, which has
// usually ended, only by the plugin's request timeout and Stop.
func deliverLate[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject, req Req, sh *wire.Shared, skip error) {
	if skip != nil {
		return
	}
	dctx, cancel := p.a.detach(ctx)
	defer cancel()
	if _, err := invoke(dctx, p, r, req, sh); err == nil {
		p.a.log.Info("event delivered to a plugin after it synchronized; its answer is not used",
			"plugin", p.full, "event", r.event.Name(), "pod", s.podID(), "container", s.ctrID())
	}
}

// accept is the one step between a plugin's outcome and its use by the
// dispatcher, the same for every event whose answers are used and every
// kind of plugin: an answer is checked on its own, before it is merged
// with the others (checkAnswer), and a failure, the plugin's or the
// check's, is judged (judge). s is what the event is about, need the
// plugins it requires by name. use reports whether the answer is to be
// used; a non-nil err fails the event. An answer the check refuses is
// told to the RefusalObserver with ctx, the event call's.
func accept[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject, need *requiredSet, o outcome[Rsp]) (use bool, err error) {
	if o.err == nil {
		o.err = p.checkAnswer(ctx, r.event, s, o.rsp)
		refused(ctx, p, r.event, o.err)
	}
	if err := judge(p, r, need, o.err); err != nil {
		return false, err
	}
	return o.err == nil, nil
}

// checkAnswer checks a plugin's answer to e on its own: an answer larger
// than the runtime accepts ([WithMaxAnswerSize]) is the plugin's failure,
// and one that updates or evicts a container outside the plugin's scope
// is refused (checkTargets), and so is one that makes changes the
// plugin's grant does not allow (checkGrant); s is what the event is
// about; ctx is the event call's. What a plugin may answer is checked
// here.
func (p *plugin) checkAnswer(ctx context.Context, e api.Event, s subject, rsp proto.Message) error {
	if n := proto.Size(rsp); n > p.a.cfg.limits.MaxAnswerSize {
		return p.fail(&PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureOversize,
			Err: &AnswerSizeError{Size: n, Limit: p.a.cfg.limits.MaxAnswerSize}})
	}
	if err := p.checkTargets(e, rsp); err != nil {
		return err
	}
	gs := p.grant.Load()
	return p.enforceGrant(ctx, e, s, checkGrant(gs, p.answerTargets(gs, s), rsp))
}

// enforceGrant decides what the findings f of the check of p's answer to
// e about s against its grant do (checkGrant): nothing if it found
// nothing; else the violations are counted, and the refusal is p's
// failure of the request (FailureDenied), under its failure policy, or,
// with a grant in audit mode, logged and told to the RefusalObserver
// with ctx (the event call's) as audited, and the answer is used.
func (p *plugin) enforceGrant(ctx context.Context, e api.Event, s subject, f grantFindings) error {
	err := f.err(p.full, s)
	if err == nil {
		return nil
	}
	p.countDenied(f.violations, f.grant.Action())
	perr := &PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureDenied, Err: err}
	if f.grant.Action() == policy.ActionAudit {
		p.log.Warn("plugin's changes would be denied by the policy (audit)", "event", e.Name(), "error", err)
		audited(ctx, p, e, perr)
		return nil
	}
	return p.fail(perr)
}

// fail handles a failure of p found outside a call to it (an answer too
// large, a plugin still synchronizing): it is counted in the metrics and
// handled like the failures of calls (onFailure). It returns perr.
func (p *plugin) fail(perr *PluginError) *PluginError {
	p.failed(perr.Op)
	p.onFailure(perr)
	return perr
}

// judge turns one plugin's delivery error into the event's error (nil:
// go on without the plugin's answer). A plugin that was gone when its
// turn came is missed only if the event requires it; a plugin's failure
// fails the event if the plugin answered with an error, if the event
// fails closed, if the plugin is required and the event requires it, or
// if the plugin's failure policy says so. A plugin is required by the
// administrator's PluginPolicy (for CreateContainer) or by name (need:
// the policy's and the pod's required plugins).
func judge[Req, Rsp proto.Message](p *plugin, r *rpc[Req, Rsp], need *requiredSet, err error) error {
	if err == nil {
		return nil // (before perr, which errors.As moves to the heap)
	}
	var perr *PluginError
	required := r.has(requiredAnswer) &&
		((p.required && r.event == api.Event_CREATE_CONTAINER) || need.has(p))
	switch {
	case errors.Is(err, errFiltered), errors.Is(err, errOptedOut):
		return nil
	case errors.Is(err, errPluginGone):
		if required {
			return &RequiredPluginError{Plugin: p.full}
		}
		return nil
	case !errors.As(err, &perr):
		return err // ctx's error, or a request too large to send
	case perr.Kind == FailureRejected, r.has(failClosed):
		return perr
	case required:
		return &RequiredPluginError{Plugin: p.full, Err: perr}
	case p.policy.failRequest:
		return perr
	}
	p.a.log.Warn("proceeding without failed plugin", "plugin", p.full, "event", r.event.Name())
	return nil
}

// detach returns a context with ctx's values that ends only when the
// Adaptation stops (or cancel is called).
func (a *Adaptation) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(a.ctx, cancel)
	return d, func() { stop(); cancel() }
}
