package adaptation

import (
	"context"
	"errors"
	"time"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// Call is one request the Adaptation sent to one plugin, as reported to
// an [Observer]: an event (including ValidateContainerAdjustment), not
// the registration, Synchronize or Shutdown.
type Call struct {
	// Plugin is the plugin's full name, IDX-NAME.
	Plugin string
	// Event is the request's event.
	Event api.Event
	// Request is what the plugin was sent. It must not be modified.
	Request proto.Message
	// Response is the plugin's answer (nil if Err is set, or if the event
	// was delivered through StateChange). It must not be modified.
	Response proto.Message
	// Err is how the plugin failed the request: a *PluginError, or the
	// error of the runtime's context if the runtime gave up first.
	Err error
	// Duration is the round trip of the request.
	Duration time.Duration
}

// Observer is told about every request the Adaptation sends to a plugin,
// once the plugin answered or failed. It is called on the goroutine that
// made the request (the plugin's worker, or for a mutating event the
// runtime's own while the worker waits), one request of a plugin at a
// time, with the context of the runtime's event call (with its
// values; for a notification delivered to a plugin after the call
// returned, a context detached from the call's cancellation), so calls
// for one plugin arrive in order and calls for different plugins
// concurrently. It must return quickly and must not call the Adaptation.
type Observer func(ctx context.Context, c Call)

// WithObserver sets a function told about every request to a plugin, for
// example to trace which plugin changed what (the nri command's
// simulator does).
func WithObserver(o Observer) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("adaptation: nil observer")
		}
		c.observer = o
		return nil
	}
}

// observe reports one request to the observer, if there is one.
func observe[Req, Rsp proto.Message](ctx context.Context, p *plugin, e api.Event, req Req, rsp Rsp, err error, d time.Duration) {
	o := p.a.cfg.observer
	if o == nil {
		return
	}
	c := Call{Plugin: p.full, Event: e, Request: req, Err: err, Duration: d}
	if err == nil && rsp.ProtoReflect().IsValid() {
		c.Response = rsp
	}
	o(ctx, c)
}

// Refusal is a plugin's answer to an event that the runtime refused once
// the plugin had given it, as reported to a [RefusalObserver]: an
// [Observer] was told of the same request as answered (Call.Err nil),
// before the answer was checked. None of the answer's changes are used.
type Refusal struct {
	// Plugin is the plugin's full name, IDX-NAME.
	Plugin string
	// Event is the request's event.
	Event api.Event
	// Err is the refusal. Its Kind says why: FailureDenied, the changes
	// are beyond the plugin's grant under the administrator's policy
	// (Err.Err is a *policy.DeniedError with the violations);
	// FailureOversize, the answer is too large; FailureRejected, it
	// updates or evicts a container outside the plugin's scope.
	Err *PluginError
	// Audited is set when the plugin's grant is in audit mode
	// (policy.ActionAudit): the runtime did not refuse the answer and
	// its changes were applied; Err says what the grant would have
	// refused (FailureDenied).
	Audited bool
}

// RefusalObserver is told about every answer to an event the runtime
// refused after checking it (see [Refusal]), and about every answer a
// grant in audit mode would have refused (Refusal.Audited), on the goroutine of the
// runtime's event call and with its context, right after the check,
// before the event goes on. It must return quickly and must not call the
// Adaptation.
type RefusalObserver func(ctx context.Context, r Refusal)

// WithRefusalObserver sets a function told about every plugin answer the
// runtime refused, for example to report refusals next to the answers an
// [Observer] saw (the nri command's simulator does).
func WithRefusalObserver(o RefusalObserver) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("adaptation: nil refusal observer")
		}
		c.refusalObserver = o
		return nil
	}
}

// refused tells the refusal observer, if there is one, that the check of
// p's answer to e refused it with err (nil: not refused).
func refused(ctx context.Context, p *plugin, e api.Event, err error) {
	o := p.a.cfg.refusalObserver
	if o == nil || err == nil {
		return
	}
	var perr *PluginError
	if errors.As(err, &perr) {
		o(ctx, Refusal{Plugin: p.full, Event: e, Err: perr})
	}
}

// audited tells the refusal observer, if there is one, that p's grant in
// audit mode would have refused its answer to e with err (see
// Refusal.Audited).
func audited(ctx context.Context, p *plugin, e api.Event, err *PluginError) {
	if o := p.a.cfg.refusalObserver; o != nil {
		o(ctx, Refusal{Plugin: p.full, Event: e, Err: err, Audited: true})
	}
}
