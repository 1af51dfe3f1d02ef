package simulator

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/policy"
)

// timeline records the events the simulator delivers and, through the
// Adaptation's observer, every plugin request they cause.
type timeline struct {
	names func(id string) string // container ID to name

	mu     sync.Mutex
	events []*report.Event
}

// routeKey is the context key of the records a runtime call feeds.
type routeKey struct{}

// route maps the events of one runtime call to their records (a
// CreateContainer call also causes ValidateContainerAdjustment requests).
type route map[api.Event]*report.Event

// begin adds a record for an event of step (1-based) and returns a context
// whose plugin requests are recorded in it; extra adds records for other
// events the same call causes.
func (t *timeline) begin(ctx context.Context, step int, e api.Event, p *pod, ctr *container, extra ...api.Event) (context.Context, route) {
	r := route{}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ev := range append([]api.Event{e}, extra...) {
		rec := &report.Event{Step: step, Event: ev.Name(), Pod: p.sc.Name, Namespace: p.sc.Namespace, OK: true}
		if ctr != nil {
			rec.Container = ctr.sc.Name
		}
		t.events = append(t.events, rec)
		r[ev] = rec
	}
	return context.WithValue(ctx, routeKey{}, r), r
}

// finish records the outcome of a runtime call (took 0 keeps the
// latency recorded so far).
func (t *timeline) finish(rec *report.Event, took time.Duration, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if took > 0 {
		rec.LatencyMs = ms(took)
	}
	if err != nil {
		rec.Error = err.Error()
	}
}

// drop removes a record that turned out not to apply.
func (t *timeline) drop(rec *report.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, e := range t.events {
		if e == rec {
			t.events = append(t.events[:i], t.events[i+1:]...)
			return
		}
	}
}

// add appends a finished record (for events no runtime call caused).
func (t *timeline) add(rec *report.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, rec)
}

// snapshot returns copies of the records.
func (t *timeline) snapshot() []report.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]report.Event, 0, len(t.events))
	for _, e := range t.events {
		c := *e
		c.Called = append([]string(nil), e.Called...)
		c.Calls = append([]report.Call(nil), e.Calls...)
		for i := range c.Calls {
			c.Calls[i].Violations = slices.Clone(c.Calls[i].Violations)
		}
		c.Changes = append([]report.Change(nil), e.Changes...)
		out = append(out, c)
	}
	return out
}

// observe records one plugin request, if the runtime call that caused it
// is being recorded.
func (t *timeline) observe(ctx context.Context, plugin string, e api.Event, took time.Duration, rsp proto.Message, err error) {
	r, _ := ctx.Value(routeKey{}).(route)
	rec := r[e]
	if rec == nil {
		return
	}
	call := report.Call{Plugin: plugin, LatencyMs: ms(took)}
	var changes []report.Change
	if err != nil {
		call.Error = err.Error()
	} else {
		changes = t.changes(plugin, rec.Container, rsp)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e == api.Event_VALIDATE_CONTAINER_ADJUSTMENT {
		// Validators run concurrently: the slowest one is the latency.
		rec.LatencyMs = max(rec.LatencyMs, call.LatencyMs)
	}
	rec.Called = append(rec.Called, plugin)
	rec.Calls = append(rec.Calls, call)
	rec.Changes = append(rec.Changes, changes...)
}

// refused marks the call of plugin in the record of event e, which the
// runtime refused with err after the plugin answered (see
// adaptation.Refusal), and its changes: none of them were applied. If
// audited, the plugin's grant is in audit mode: the call and its changes
// are marked audited instead, and were applied.
func (t *timeline) refused(ctx context.Context, plugin string, e api.Event, err *adaptation.PluginError, audited bool) {
	r, _ := ctx.Value(routeKey{}).(route)
	rec := r[e]
	if rec == nil {
		return
	}
	var violations []report.Violation
	msg, action := err.Error(), report.ActionRefused
	if audited {
		action = report.ActionAudited
	}
	var denied *policy.DeniedError
	if errors.As(err, &denied) {
		msg = denied.Error()
		for _, v := range denied.Violations {
			violations = append(violations, report.Violation{Field: v.Field.String(), Value: v.Value, Reason: v.Reason,
				Rule: v.Rule, Action: action})
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(rec.Calls) - 1; i >= 0; i-- {
		if c := &rec.Calls[i]; c.Plugin == plugin {
			if audited {
				c.Audited, c.Violations = true, violations
			} else {
				c.Error, c.Refused, c.Violations = msg, true, violations
			}
			break
		}
	}
	for i := range rec.Changes {
		if rec.Changes[i].Plugin == plugin {
			rec.Changes[i].Refused, rec.Changes[i].Audited = !audited, audited
		}
	}
}

// changes lists what a plugin's answer changes: the adjustment of the
// container being created (self), and updates of containers.
func (t *timeline) changes(plugin, self string, rsp proto.Message) []report.Change {
	var out []report.Change
	var updates []*api.ContainerUpdate
	switch r := rsp.(type) {
	case *api.CreateContainerResponse:
		out = fieldChanges(plugin, self, "", r.GetAdjust())
		updates = r.GetUpdate()
	case *api.UpdateContainerResponse:
		updates = r.GetUpdate()
	case *api.StopContainerResponse:
		updates = r.GetUpdate()
	}
	for _, u := range updates {
		out = append(out, fieldChanges(plugin, t.names(u.GetContainerId()), "linux.resources.", u.GetLinux().GetResources())...)
	}
	return out
}

// fieldChanges lists the set fields of m as changes by plugin; a key with
// a removal marker ("env[-FOO]") is a removal.
func fieldChanges(plugin, container, prefix string, m proto.Message) []report.Change {
	fields := ocispec.Fields(m)
	var out []report.Change
	for _, path := range slices.Sorted(maps.Keys(fields)) {
		c := report.Change{Plugin: plugin, Container: container, Field: prefix + path, Value: fields[path]}
		if i := strings.Index(c.Field, "[-"); i >= 0 {
			c.Field = c.Field[:i+1] + c.Field[i+2:]
			c.Removed, c.Value = true, ""
		}
		out = append(out, c)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
