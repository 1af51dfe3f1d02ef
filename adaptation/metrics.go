package adaptation

import (
	"context"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
)

// Metric names, all labelled by plugin ("IDX-NAME") and request (an event
// name, "Configure" or "Synchronize"), except the plugin gauge. Package
// adaptation/runtimemetrics registers them with a Prometheus registry;
// the Adaptation tells it what to count through a [MetricsRecorder] that
// implements [RequestRecorder], [DeniedRecorder] and [AuditedRecorder].
const (
	MetricRequests       = "nri_plugin_requests_total"
	MetricRequestSeconds = "nri_plugin_request_duration_seconds"
	MetricErrors         = "nri_plugin_request_errors_total"
	MetricTimeouts       = "nri_plugin_request_timeouts_total"
	MetricPlugins        = "nri_plugins"
	// MetricFiltered counts the events a plugin subscribed to but was
	// not sent because their pod or container is outside its scope.
	MetricFiltered = "nri_plugin_events_filtered_total"
	// MetricOptedOut counts the events a plugin subscribed to but was
	// not sent because it opted out of their pod or container.
	MetricOptedOut = "nri_plugin_events_opted_out_total"
	// MetricDenied counts the changes in plugins' answers that their
	// grant under the administrator's policy does not allow (see
	// [WithPolicy]), by plugin, field (a capability.Capability's stable
	// name) and action ([ActionDenied]: refused, told to a [DeniedRecorder];
	// [ActionAudited]: the grant is in audit mode, the change was
	// applied, told to an [AuditedRecorder]).
	MetricDenied = "nri_plugin_denied_total"
)

// RequestRecorder is an optional interface of a [MetricsRecorder]: a
// recorder that implements it is told, per plugin, what the metrics
// above count. Until [RequestRecorder.ForgetPlugin] is called for a
// plugin, and never after, it is told of that plugin's requests,
// failures, skipped events and (with [DeniedRecorder] and
// [AuditedRecorder]) refused and audited changes.
// Its methods must return quickly and must not call the Adaptation.
type RequestRecorder interface {
	// RecordRequest is told of every request sent to a plugin (the
	// events, Configure, and each part of Synchronize) once it is
	// answered (kind 0) or failed, with its round trip.
	RecordRequest(plugin, request string, took time.Duration, kind FailureKind)
	// RecordFailure is told of a failure of the plugin's found outside a
	// request's round trip: an answer refused for its size once it
	// arrived, an event that a plugin still synchronizing could not take.
	RecordFailure(plugin, request string)
	// PluginSkips is called once as the plugin registers, with the events
	// it subscribed to. The Adaptation counts each of those events it
	// does not send to the plugin with the SkipCounter returned (nil:
	// they are not counted).
	PluginSkips(plugin string, events api.EventMask) SkipCounter
	// ForgetPlugin is told that the plugin records nothing more (its
	// registration failed, or it is gone) and that no other plugin of the
	// same name is registered or registering: what is kept for it can go,
	// so that plugins coming and going under ever new names do not grow
	// it without bound.
	ForgetPlugin(plugin string)
}

// SkipCounter counts the events not sent to one plugin (see
// [RequestRecorder.PluginSkips]). It must be safe for concurrent use.
type SkipCounter interface {
	// Skipped counts event e, not sent because the plugin opted out of
	// its pod or container (optedOut), or because that is outside the
	// plugin's scope.
	Skipped(e api.Event, optedOut bool)
}

// metrics is what the Adaptation tells its MetricsRecorder; a nil
// *metrics records nothing.
type metrics struct {
	rec     MetricsRecorder
	req     RequestRecorder // rec, if it implements it; or nil
	denied  DeniedRecorder  // likewise
	audited AuditedRecorder // likewise
}

// newMetrics returns the metrics told to recs, or nil if there are none.
func newMetrics(recs []MetricsRecorder) *metrics {
	rec := joinRecorders(recs)
	if rec == nil {
		return nil
	}
	m := &metrics{rec: rec}
	m.req, _ = rec.(RequestRecorder)
	m.denied, _ = rec.(DeniedRecorder)
	m.audited, _ = rec.(AuditedRecorder)
	return m
}

// requests returns the RequestRecorder, or nil.
func (m *metrics) requests() RequestRecorder {
	if m == nil {
		return nil
	}
	return m.req
}

// setPlugins records the number of plugins receiving events.
func (m *metrics) setPlugins(n int) {
	if m != nil {
		m.rec.RecordPluginCount(n)
	}
}

// skipCounter returns the counter of the events not sent to plugin, or
// nil.
func (m *metrics) skipCounter(plugin string, events api.EventMask) SkipCounter {
	if r := m.requests(); r != nil {
		return r.PluginSkips(plugin, events)
	}
	return nil
}

// countSkipped records an event not sent to p for reason v.
func (p *plugin) countSkipped(e api.Event, v verdict) {
	if p.skips != nil && e.IsValid() {
		p.skips.Skipped(e, v == optedOut)
	}
}

// pluginMetrics is a plugin's hold on what its recorder keeps for it:
// that is forgotten when the plugin is gone (see Adaptation.dropMetrics),
// after which the plugin records nothing more.
type pluginMetrics struct {
	mu   sync.RWMutex
	gone bool
}

// observe records one request of p.
func (p *plugin) observe(request string, d time.Duration, kind FailureKind) {
	r := p.a.metrics.requests()
	if r == nil {
		return
	}
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if !p.pm.gone {
		r.RecordRequest(p.full, request, d, kind)
	}
}

// failed records a failure of p found outside a request (see
// RequestRecorder.RecordFailure).
func (p *plugin) failed(request string) {
	r := p.a.metrics.requests()
	if r == nil {
		return
	}
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if !p.pm.gone {
		r.RecordFailure(p.full, request)
	}
}

// dropMetrics tells the recorder to forget p once p records nothing more
// (its registration failed, or its worker ended), unless another plugin
// of the same name is registered or registering: what is kept is theirs
// too.
func (a *Adaptation) dropMetrics(p *plugin) {
	r := a.metrics.requests()
	if r == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if q := a.admitting[p.full]; q != nil && q != p {
		return
	}
	if q := a.findLocked(p.full); q != nil && q != p {
		return
	}
	p.pm.mu.Lock()
	defer p.pm.mu.Unlock()
	p.pm.gone = true
	r.ForgetPlugin(p.full)
}

// joinRecorders returns one recorder telling each of recs, nil if there
// are none, or the only one.
func joinRecorders(recs []MetricsRecorder) MetricsRecorder {
	switch len(recs) {
	case 0:
		return nil
	case 1:
		return recs[0]
	}
	return multiRecorder(recs)
}

// multiRecorder tells each of its recorders, in order, what they
// implement.
type multiRecorder []MetricsRecorder

var (
	_ RequestRecorder = multiRecorder(nil)
	_ DeniedRecorder  = multiRecorder(nil)
	_ AuditedRecorder = multiRecorder(nil)
)

// RecordCall implements MetricsRecorder.
func (m multiRecorder) RecordCall(ctx context.Context, c Call) {
	for _, r := range m {
		r.RecordCall(ctx, c)
	}
}

// RecordPluginCount implements MetricsRecorder.
func (m multiRecorder) RecordPluginCount(n int) {
	for _, r := range m {
		r.RecordPluginCount(n)
	}
}

// RecordDenied implements DeniedRecorder.
func (m multiRecorder) RecordDenied(ctx context.Context, plugin, field string) {
	for _, r := range m {
		if d, ok := r.(DeniedRecorder); ok {
			d.RecordDenied(ctx, plugin, field)
		}
	}
}

// RecordAudited implements AuditedRecorder.
func (m multiRecorder) RecordAudited(ctx context.Context, plugin, field string) {
	for _, r := range m {
		if d, ok := r.(AuditedRecorder); ok {
			d.RecordAudited(ctx, plugin, field)
		}
	}
}

// RecordRequest implements RequestRecorder.
func (m multiRecorder) RecordRequest(plugin, request string, took time.Duration, kind FailureKind) {
	for _, r := range m {
		if q, ok := r.(RequestRecorder); ok {
			q.RecordRequest(plugin, request, took, kind)
		}
	}
}

// RecordFailure implements RequestRecorder.
func (m multiRecorder) RecordFailure(plugin, request string) {
	for _, r := range m {
		if q, ok := r.(RequestRecorder); ok {
			q.RecordFailure(plugin, request)
		}
	}
}

// PluginSkips implements RequestRecorder.
func (m multiRecorder) PluginSkips(plugin string, events api.EventMask) SkipCounter {
	var cs multiSkips
	for _, r := range m {
		if q, ok := r.(RequestRecorder); ok {
			if c := q.PluginSkips(plugin, events); c != nil {
				cs = append(cs, c)
			}
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// ForgetPlugin implements RequestRecorder.
func (m multiRecorder) ForgetPlugin(plugin string) {
	for _, r := range m {
		if q, ok := r.(RequestRecorder); ok {
			q.ForgetPlugin(plugin)
		}
	}
}

// multiSkips is the SkipCounters of one plugin's recorders.
type multiSkips []SkipCounter

// Skipped implements SkipCounter.
func (m multiSkips) Skipped(e api.Event, optedOut bool) {
	for _, c := range m {
		c.Skipped(e, optedOut)
	}
}
