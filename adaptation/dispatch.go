package adaptation

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// method is one Plugin service method as endpoints call it: by name over
// a connection, in-process through serve.
type method struct {
	name string
	// wasm is the export of the WASM ABI that serves the method
	// (docs/wasm-abi.md), looked up once here rather than on every call.
	wasm string
	// answer is the type of the method's answer, to decode it into.
	answer protoreflect.MessageType
	serve  func(api.PluginService, context.Context, proto.Message) (proto.Message, error)
}

// newMethod describes the method call of api.PluginService, named name.
func newMethod[Req, Rsp proto.Message](name string, call func(api.PluginService, context.Context, Req) (Rsp, error)) *method {
	var rsp Rsp
	return &method{name: name, wasm: wasmabi.MethodFunc(name), answer: rsp.ProtoReflect().Type(),
		serve: func(svc api.PluginService, ctx context.Context, req proto.Message) (proto.Message, error) {
			r, _ := req.(Req)
			return call(svc, ctx, r)
		}}
}

// methodStateChange is the method of the StateChange fallback.
var methodStateChange = newMethod("StateChange", api.PluginService.StateChange)

// rpc describes how one event is sent to a plugin. The values below are
// immutable descriptors; adding an event means adding one of them and
// one thin public method.
type rpc[Req, Rsp proto.Message] struct {
	event  api.Event
	method *method
	// legacy, if set, turns the request into a StateChangeEvent for
	// plugins that do not implement the dedicated RPC (as upstream's
	// runtime does for the events whose answer carries nothing).
	legacy func(Req) *api.StateChangeEvent
}

// newRPC describes event e, sent with call (the method of the same name).
func newRPC[Req, Rsp proto.Message](e api.Event, call func(api.PluginService, context.Context, Req) (Rsp, error),
	legacy func(Req) *api.StateChangeEvent) *rpc[Req, Rsp] {
	return &rpc[Req, Rsp]{event: e, method: newMethod(e.Name(), call), legacy: legacy}
}

// send makes the call m with req to the plugin at ep (see endpoint.call)
// and returns its answer as the method's answer type Rsp.
func send[Rsp proto.Message](ctx context.Context, ep endpoint, m *method, req proto.Message, sh *shared) (Rsp, error) {
	out, err := ep.call(ctx, m, req, sh)
	rsp, _ := out.(Rsp)
	return rsp, err
}

type podRequest interface {
	proto.Message
	GetPod() *api.PodSandbox
}

type containerRequest interface {
	podRequest
	GetContainer() *api.Container
}

func podChange[R podRequest](e api.Event) func(R) *api.StateChangeEvent {
	return func(r R) *api.StateChangeEvent { return &api.StateChangeEvent{Event: e, Pod: r.GetPod()} }
}

func containerChange[R containerRequest](e api.Event) func(R) *api.StateChangeEvent {
	return func(r R) *api.StateChangeEvent {
		return &api.StateChangeEvent{Event: e, Pod: r.GetPod(), Container: r.GetContainer()}
	}
}

var (
	rpcRunPodSandbox = newRPC(
		api.Event_RUN_POD_SANDBOX, api.PluginService.RunPodSandbox,
		podChange[*api.RunPodSandboxRequest](api.Event_RUN_POD_SANDBOX))
	rpcUpdatePodSandbox = newRPC(
		api.Event_UPDATE_POD_SANDBOX, api.PluginService.UpdatePodSandbox, nil)
	rpcPostUpdatePodSandbox = newRPC(
		api.Event_POST_UPDATE_POD_SANDBOX, api.PluginService.PostUpdatePodSandbox,
		podChange[*api.PostUpdatePodSandboxRequest](api.Event_POST_UPDATE_POD_SANDBOX))
	rpcStopPodSandbox = newRPC(
		api.Event_STOP_POD_SANDBOX, api.PluginService.StopPodSandbox,
		podChange[*api.StopPodSandboxRequest](api.Event_STOP_POD_SANDBOX))
	rpcRemovePodSandbox = newRPC(
		api.Event_REMOVE_POD_SANDBOX, api.PluginService.RemovePodSandbox,
		podChange[*api.RemovePodSandboxRequest](api.Event_REMOVE_POD_SANDBOX))
	rpcCreateContainer = newRPC(
		api.Event_CREATE_CONTAINER, api.PluginService.CreateContainer, nil)
	rpcPostCreateContainer = newRPC(
		api.Event_POST_CREATE_CONTAINER, api.PluginService.PostCreateContainer,
		containerChange[*api.PostCreateContainerRequest](api.Event_POST_CREATE_CONTAINER))
	rpcStartContainer = newRPC(
		api.Event_START_CONTAINER, api.PluginService.StartContainer,
		containerChange[*api.StartContainerRequest](api.Event_START_CONTAINER))
	rpcPostStartContainer = newRPC(
		api.Event_POST_START_CONTAINER, api.PluginService.PostStartContainer,
		containerChange[*api.PostStartContainerRequest](api.Event_POST_START_CONTAINER))
	rpcUpdateContainer = newRPC(
		api.Event_UPDATE_CONTAINER, api.PluginService.UpdateContainer, nil)
	rpcPostUpdateContainer = newRPC(
		api.Event_POST_UPDATE_CONTAINER, api.PluginService.PostUpdateContainer,
		containerChange[*api.PostUpdateContainerRequest](api.Event_POST_UPDATE_CONTAINER))
	rpcStopContainer = newRPC(
		api.Event_STOP_CONTAINER, api.PluginService.StopContainer, nil)
	rpcRemoveContainer = newRPC(
		api.Event_REMOVE_CONTAINER, api.PluginService.RemoveContainer,
		containerChange[*api.RemoveContainerRequest](api.Event_REMOVE_CONTAINER))
	rpcValidate = newRPC(
		api.Event_VALIDATE_CONTAINER_ADJUSTMENT, api.PluginService.ValidateContainerAdjustment, nil)
)

// invoke makes one call to one plugin. It is the single path of every
// event to every plugin: request timeout, StateChange fallback, metrics,
// failure classification, logging and the disconnecting half of the
// failure policy. It runs on p's worker, or on the dispatcher that took
// the turn from it (slot.takeTurn). sh is what req has in common with
// the requests of the event to the other plugins (see shared). A
// non-nil error is a *PluginError, ctx's error if the runtime gave up
// first, or a *requestSizeError if req was too large to send.
func invoke[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], req Req, sh *shared) (Rsp, error) {
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
	if r.legacy != nil && p.legacy[r.event].Load() {
		_, err = p.ep.call(rctx, methodStateChange, r.legacy(req), nil)
	} else {
		rsp, err = send[Rsp](rctx, p.ep, r.method, req, sh)
		if err != nil && r.legacy != nil && status.Code(err) == codes.Unimplemented {
			if !p.legacy[r.event].Swap(true) {
				p.a.log.Warn("plugin does not implement a dedicated RPC, using StateChange",
					"plugin", p.full, "event", r.event.Name())
				p.a.deprecatedStateChange(ctx, p.full, r.event)
			}
			rsp = zero
			_, err = p.ep.call(rctx, methodStateChange, r.legacy(req), nil)
		}
	}
	if err != nil {
		if _, tooLarge := requestSize(err); tooLarge {
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
	case FailureSynchronizing:
		p.a.log.Warn("plugin still synchronizing, event proceeds without waiting for it", "plugin", p.full,
			"event", perr.Op, "waited", perr.Timeout)
	default:
		p.a.log.Warn("plugin failed request", "plugin", p.full, "event", perr.Op, "error", errorMessage(perr.Err))
	}
}

// failsRequest decides whether a plugin's failure of a mutating event
// fails the runtime's request: always when the plugin answered with an
// error; for timeouts, crashes and lost connections if the plugin's
// failure policy says so, or if the plugin is required and the event is
// CreateContainer.
func failsRequest(p *plugin, e api.Event, perr *PluginError) error {
	switch {
	case perr.Kind == FailureRejected:
		return perr
	case p.required && e == api.Event_CREATE_CONTAINER:
		return &RequiredPluginError{Plugin: p.full, Err: perr}
	case p.policy.failRequest:
		return perr
	}
	p.a.log.Warn("proceeding without failed plugin", "plugin", p.full, "event", e.Name())
	return nil
}

// outcome is one plugin's answer as its worker reports it.
type outcome[Rsp any] struct {
	rsp Rsp
	err error
}

// mutate delivers a mutating event about s to its subscribed plugins one
// after the other, in invocation order. next builds the request for a
// plugin from the result so far (the endpoints encode what the requests
// have in common once, see shared); fold takes the plugin's answer in (an opt-out in it is recorded before). check, if not
// nil, can refuse the event up front (under the registry lock). The first
// error ends the walk and is returned. For CreateContainer, mutate also
// returns the subscribed plugins that were not called because s is
// outside their scope or they opted out of it.
func mutate[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject,
	check func() error, next func(*plugin) Req, fold func(*plugin, Rsp) error) ([]*plugin, error) {
	res, err := a.reserve(r.event, s, check, true)
	if err != nil {
		return nil, err
	}
	sh := &shared{}
	for i, p := range res.plugins {
		req := next(p)
		var o outcome[Rsp]
		if sl := res.slots[i]; sl.lent {
			// Lent at reserve time: the worker was idle and is not woken.
			skip := p.verdict(sl)
			o = deliverMutation(ctx, p, r, s, req, sh, skip)
			p.q.giveBack(sl)
			if skip == errOptedOut {
				p.skipped(r.event, optedOut)
			}
		} else if sl.takeTurn() {
			// The worker waits at the slot: call the plugin from here.
			skip := sl.skip
			if skip == nil && p.isGone() {
				skip = errPluginGone
			}
			o = deliverMutation(ctx, p, r, s, req, sh, skip)
			sl.finish()
		} else {
			out := make(chan outcome[Rsp], 1)
			h := &handoff{}
			sl.fill <- func(skip error) {
				if !h.start() {
					deliverLate(ctx, p, r, s, req, sh, skip)
					return
				}
				out <- deliverMutation(ctx, p, r, s, req, sh, skip)
			}
			var done bool
			if o, done = awaitTurn(ctx, a, p, r.event, res.catchUp[i], h, out); !done {
				res.release(i + 1)
				return nil, ctx.Err()
			}
		}
		if o.err == nil {
			o.err = p.checkAnswer(r.event, o.rsp)
		}
		if err := a.judge(p, r.event, o.err); err != nil {
			res.release(i + 1)
			return nil, err
		}
		if o.err != nil {
			continue
		}
		if err := fold(p, o.rsp); err != nil {
			res.release(i + 1)
			return nil, err
		}
	}
	return res.excluded, nil
}

// handoff decides, once, whether a work filled into a slot runs for the
// dispatcher that waits for it, or late, after the dispatcher stopped
// waiting (see awaitTurn).
type handoff struct{ state atomic.Int32 }

// start reports whether the work runs for its dispatcher; after it the
// dispatcher can no longer give up on it.
func (h *handoff) start() bool { return h.state.CompareAndSwap(0, 1) }

// abandon reports whether the dispatcher gave up before the work started.
func (h *handoff) abandon() bool { return h.state.CompareAndSwap(0, 2) }

// awaitTurn waits for the outcome of a work filled into p's slot. For a
// plugin that was synchronizing when the event started (catchUp), the
// wait is bounded by the synchronize wait: if the work has not started
// by then, the dispatcher gives up on it (the work then runs late, see
// deliverLate) and the outcome is a FailureSynchronizing. A work that has
// started is bounded by the plugin's request timeout. done is false if
// ctx ended first.
func awaitTurn[Rsp any](ctx context.Context, a *Adaptation, p *plugin, e api.Event, catchUp bool, h *handoff, out <-chan outcome[Rsp]) (o outcome[Rsp], done bool) {
	var expired <-chan time.Time // nil: no bound
	if catchUp {
		t := time.NewTimer(a.cfg.syncWait)
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case o = <-out:
			return o, true
		case <-ctx.Done():
			return o, false
		case <-expired:
			if h.abandon() {
				return outcome[Rsp]{err: p.fail(&PluginError{Plugin: p.full, Op: e.Name(),
					Kind: FailureSynchronizing, Timeout: a.cfg.syncWait})}, true
			}
			expired = nil // the work has started: its own timeout bounds it
		}
	}
}

// deliverLate delivers a mutating event to a plugin whose dispatcher gave
// up waiting for it while it synchronized (see awaitTurn): the plugin
// still sees the event, so that it knows every object, but its answer is
// not used. The call is not bounded by the runtime's context, which has
// usually ended, only by the plugin's request timeout and Stop.
func deliverLate[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject, req Req, sh *shared, skip error) {
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

// checkAnswer fails an answer larger than the runtime accepts
// ([WithMaxAnswerSize]) as the plugin's own failure.
func (p *plugin) checkAnswer(e api.Event, rsp proto.Message) error {
	n := proto.Size(rsp)
	if n <= p.a.cfg.maxAnswerSize {
		return nil
	}
	return p.fail(&PluginError{Plugin: p.full, Op: e.Name(), Kind: FailureOversize,
		Err: &AnswerSizeError{Size: n, Limit: p.a.cfg.maxAnswerSize}})
}

// fail handles a failure of p found outside a call to it (an answer too
// large, a plugin still synchronizing): it is counted in the metrics and
// handled like the failures of calls (onFailure). It returns perr.
func (p *plugin) fail(perr *PluginError) *PluginError {
	p.failed(perr.Op)
	p.onFailure(perr)
	return perr
}

// deliverMutation makes the call of a mutating event to p, unless skip says why
// not, and records an opt-out in the answer before the next event for p
// starts.
func deliverMutation[Req, Rsp proto.Message](ctx context.Context, p *plugin, r *rpc[Req, Rsp], s subject, req Req, sh *shared, skip error) outcome[Rsp] {
	if skip != nil {
		return outcome[Rsp]{err: skip}
	}
	rsp, err := invoke(ctx, p, r, req, sh)
	if err == nil {
		p.takeOptOut(r.event, s, rsp)
	}
	return outcome[Rsp]{rsp, err}
}

// judge turns one plugin's delivery error into the request's error (nil:
// go on without the plugin's answer).
func (a *Adaptation) judge(p *plugin, e api.Event, err error) error {
	var perr *PluginError
	switch {
	case err == nil, errors.Is(err, errFiltered), errors.Is(err, errOptedOut):
		return nil
	case errors.Is(err, errPluginGone):
		if p.required && e == api.Event_CREATE_CONTAINER {
			return &RequiredPluginError{Plugin: p.full}
		}
		return nil
	case errors.As(err, &perr):
		return failsRequest(p, e, perr)
	}
	return err
}

// notify delivers a notification about s to every subscribed plugin for
// which s is in scope, concurrently (each plugin in its own order of
// events) and waits until the plugins that are active have handled it or
// ctx ends; plugins still synchronizing get it later. Failures are
// logged, never returned.
func notify[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject, req Req) error {
	res, err := a.reserve(r.event, s, nil, false)
	if err != nil {
		a.log.Debug("event not delivered", "event", r.event.Name(), "error", err)
		return nil
	}
	// The connected plugins' endpoints encode the request once for all
	// of them.
	sh := &shared{}
	var wait []chan struct{}
	for i, p := range res.plugins {
		done := make(chan struct{})
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if res.catchUp[i] {
			// Delivered after the runtime's call returned.
			dctx, cancel = a.detach(ctx)
		} else {
			wait = append(wait, done)
		}
		res.slots[i].fill <- func(skip error) {
			defer close(done)
			defer cancel()
			if skip == nil {
				_, _ = invoke(dctx, p, r, req, sh)
			}
		}
	}
	for _, done := range wait {
		select {
		case <-done:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// detach returns a context with ctx's values that ends only when the
// Adaptation stops (or cancel is called).
func (a *Adaptation) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(a.ctx, cancel)
	return d, func() { stop(); cancel() }
}
