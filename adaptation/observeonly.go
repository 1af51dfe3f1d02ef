package adaptation

import (
	"context"

	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// Observe-only plugins (docs/protocol.md, "Observe-only plugins"): a
// plugin that declares in its Configure answer that it only observes
// (ConfigureResponse.observe_only, a nrikit extension), such as the
// recorder behind `nri record`, changes nothing and fails nothing, so no
// event waits for it. Its slot in its queue is reserved when the event
// starts, as every plugin's is, so that it sees the events in the order
// they started; the slot is filled once the event's request to it is
// final (a mutating event's after the other plugins have answered, with
// their result: CreateContainer's container as the last of them saw it,
// validation with the combined adjustment), and the runtime's call
// returns without waiting for the observer's answer. The answer is not
// used: changes in it are dropped with a log line, a failure is logged
// and handled as a failure of the plugin (a timeout disconnects it
// unless its failure policy keeps it), never as the event's. If the
// event fails before its plugins are through, the observers do not get
// it, as a plugin after the failing one does not.
//
// Its updates are not applied either: those of its Synchronize answer and
// of its UpdateContainers requests come back refused, and an eviction it
// asks for refuses the request (see splitUpdates, refusedEviction).

// observer is an observe-only plugin of an event and its reserved slot.
type observer struct {
	p  *plugin
	sl *queue.Slot
}

// deliverObservers fills the observers' slots of res with the event's
// call: each gets the final request req (nil: none is sent), on its
// worker, with a context detached from the call's cancellation, bounded
// by the observer's request timeout and Stop. Nothing waits for them.
// Callers build req only if res has observers (observed): a request
// builder handed over to the workers would be allocated on every call,
// observers or not, as escape analysis cannot tell the two apart.
func deliverObservers[Req, Rsp proto.Message](ctx context.Context, a *Adaptation, r *rpc[Req, Rsp], s subject,
	res *reservation, req Req, sh *wire.Shared) {
	for _, o := range res.observers {
		p := o.p
		o.sl.Fill(func(skip error) {
			dctx, cancel := a.detach(ctx)
			defer cancel()
			if !req.ProtoReflect().IsValid() {
				return
			}
			if out := deliverEvent(dctx, p, r, s, req, sh, skip); out.err == nil && changes(out.rsp) {
				p.log.Warn("observe-only plugin answered with changes; an observer changes nothing, dropping them",
					"event", r.event.Name(), "pod", s.podID(), "container", s.ctrID())
			}
		})
		p.q.Wake()
	}
	res.observers = nil
}

// observed reports whether res has observers to deliver the event to.
func (r *reservation) observed() bool { return len(r.observers) > 0 }

// dropObservers gives up the observers' slots of an event that did not
// happen.
func (r *reservation) dropObservers() {
	for _, o := range r.observers {
		o.sl.Fill(nil)
		o.p.q.Wake()
	}
	r.observers = nil
}

// changes reports whether an answer to an event asks for anything: an
// adjustment, updates, evictions or a rejection.
func changes(rsp proto.Message) bool {
	if a, ok := rsp.(interface {
		GetAdjust() *api.ContainerAdjustment
	}); ok && proto.Size(a.GetAdjust()) > 0 {
		return true
	}
	if u, ok := rsp.(updater); ok && len(u.GetUpdate()) > 0 {
		return true
	}
	if e, ok := rsp.(evicter); ok && len(e.GetEvict()) > 0 {
		return true
	}
	v, ok := rsp.(*api.ValidateContainerAdjustmentResponse)
	return ok && v.GetReject()
}

// refuseObserverUpdates returns every update of an observe-only plugin
// as refused, logging it; for other plugins it returns nil, false.
func (p *plugin) refuseObserverUpdates(updates []*api.ContainerUpdate) ([]*api.ContainerUpdate, bool) {
	if !p.observeOnly {
		return nil, false
	}
	if len(updates) > 0 {
		p.log.Warn("refusing the container updates of an observe-only plugin: an observer changes nothing", "refused", len(updates))
	}
	return updates, true
}

// drainObserver waits until an observe-only plugin is through the events
// queued for it, at most until ctx ends: Stop calls it before it sends
// Shutdown, so that an observer is not stopped before the events whose
// calls returned without waiting for it.
func (p *plugin) drainObserver(ctx context.Context) {
	if !p.observeOnly {
		return
	}
	done := make(chan struct{})
	if !p.enqueue(func(error) { close(done) }) {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}
