package adaptation

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the per-plugin metrics registered by WithMetrics, and the
// runtime's MetricsRecorder. A nil *metrics records nothing; without
// WithMetrics the prometheus fields are nil.
type metrics struct {
	rec MetricsRecorder // may be nil

	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	timeouts *prometheus.CounterVec
	filtered *prometheus.CounterVec
	optedOut *prometheus.CounterVec
	denied   *prometheus.CounterVec
	plugins  prometheus.Gauge
}

// Metric names, all labelled by plugin ("IDX-NAME") and request (an event
// name, "Configure" or "Synchronize"), except the plugin gauge.
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
	// grant under the administrator's policy refused (see [WithPolicy]),
	// by plugin and field (a policy.Capability's stable name).
	MetricDenied = "nri_plugin_denied_total"
)

func newMetrics(r prometheus.Registerer, rec MetricsRecorder) (*metrics, error) {
	switch {
	case r == nil && rec == nil:
		return nil, nil
	case r == nil:
		return &metrics{rec: rec}, nil
	}
	labels := []string{"plugin", "request"}
	m := &metrics{
		rec: rec,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests, Help: "Requests sent to NRI plugins.",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestSeconds,
			Help:    "Time NRI plugins took to answer requests.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricErrors, Help: "Requests NRI plugins failed (answered with an error, timed out or were lost).",
		}, labels),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricTimeouts, Help: "Requests NRI plugins did not answer in time.",
		}, labels),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricFiltered, Help: "Events not sent to NRI plugins because their object is outside the plugin's scope.",
		}, labels),
		optedOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricOptedOut, Help: "Events not sent to NRI plugins because the plugin opted out of their object.",
		}, labels),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricDenied, Help: "Changes in NRI plugins' answers refused by the plugin's grant, by field.",
		}, []string{"plugin", "field"}),
		plugins: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricPlugins, Help: "NRI plugins receiving events (synchronizing or active).",
		}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.calls, m.latency, m.errors, m.timeouts, m.filtered, m.optedOut, m.denied, m.plugins} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("adaptation: registering metrics: %w", err)
	}
	return m, nil
}

// prom reports whether the prometheus metrics are registered.
func (m *metrics) prom() bool { return m != nil && m.calls != nil }

// observe records one request.
func (m *metrics) observe(plugin, request string, d time.Duration, kind FailureKind) {
	if !m.prom() {
		return
	}
	m.calls.WithLabelValues(plugin, request).Inc()
	m.latency.WithLabelValues(plugin, request).Observe(d.Seconds())
	if kind != 0 {
		m.errors.WithLabelValues(plugin, request).Inc()
	}
	if kind == FailureTimeout {
		m.timeouts.WithLabelValues(plugin, request).Inc()
	}
}

// failed records a failure found after the request was observed (an
// answer too large) or without a request (a plugin still synchronizing).
func (m *metrics) failed(plugin, request string) {
	if !m.prom() {
		return
	}
	m.errors.WithLabelValues(plugin, request).Inc()
}

// deletePlugin deletes every series of plugin.
// deny counts a change of plugin's refused by its grant.
func (m *metrics) deny(plugin, field string) {
	if !m.prom() {
		return
	}
	m.denied.WithLabelValues(plugin, field).Inc()
}

func (m *metrics) deletePlugin(plugin string) {
	if !m.prom() {
		return
	}
	l := prometheus.Labels{"plugin": plugin}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.calls, m.latency, m.errors, m.timeouts, m.filtered, m.optedOut, m.denied,
	} {
		v.DeletePartialMatch(l)
	}
}

// pluginMetrics is a plugin's hold on its metric series: they are
// deleted when the plugin is gone (see Adaptation.dropMetrics), so that
// plugins coming and going under ever new names do not grow the metrics
// without bound. After that the plugin records nothing more.
type pluginMetrics struct {
	mu   sync.RWMutex
	gone bool
}

// observe records one request of p.
func (p *plugin) observe(request string, d time.Duration, kind FailureKind) {
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if !p.pm.gone {
		p.a.metrics.observe(p.full, request, d, kind)
	}
}

// failed records a failure of p found outside a request (see
// metrics.failed).
func (p *plugin) failed(request string) {
	p.pm.mu.RLock()
	defer p.pm.mu.RUnlock()
	if !p.pm.gone {
		p.a.metrics.failed(p.full, request)
	}
}

// dropMetrics deletes p's metric series once p records nothing more (its
// registration failed, or its worker ended), unless another plugin of the
// same name is registered or registering: the series are theirs too.
func (a *Adaptation) dropMetrics(p *plugin) {
	if a.metrics == nil {
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
	a.metrics.deletePlugin(p.full)
}

// setPlugins records the number of plugins receiving events.
func (m *metrics) setPlugins(n int) {
	if m == nil {
		return
	}
	if m.rec != nil {
		m.rec.RecordPluginCount(n)
	}
	if m.prom() {
		m.plugins.Set(float64(n))
	}
}

// skipCounters are one plugin's MetricFiltered and MetricOptedOut
// counters, resolved once per event at registration so that counting a
// skipped event is one atomic add. A nil *skipCounters counts nothing.
type skipCounters struct {
	filtered, optedOut [api.Event_LAST]prometheus.Counter
}

// skipCounters resolves the counters of plugin for the events it
// subscribed to.
func (m *metrics) skipCounters(plugin string, events api.EventMask) *skipCounters {
	if !m.prom() {
		return nil
	}
	c := &skipCounters{}
	for _, e := range events.Events() {
		c.filtered[e] = m.filtered.WithLabelValues(plugin, e.Name())
		c.optedOut[e] = m.optedOut.WithLabelValues(plugin, e.Name())
	}
	return c
}

// count records an event not sent for reason v.
func (c *skipCounters) count(e api.Event, v verdict) {
	if c == nil || !e.IsValid() {
		return
	}
	counter := c.filtered[e]
	if v == optedOut {
		counter = c.optedOut[e]
	}
	if counter != nil {
		counter.Inc()
	}
}
