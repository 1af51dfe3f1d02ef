// Package runtimemetrics counts an [adaptation.Adaptation]'s requests to
// its plugins in Prometheus: it is the [adaptation.MetricsRecorder] a
// runtime installs with [adaptation.WithMetricsRecorder] when it wants
// them.
//
//	m, err := runtimemetrics.New(prometheus.DefaultRegisterer)
//	if err != nil { ... }
//	a, err := adaptation.New(name, version, list, update, adaptation.WithMetricsRecorder(m))
//
// Per plugin ("IDX-NAME") and request (an event name, "Configure" or
// "Synchronize") it counts [adaptation.MetricRequests],
// [adaptation.MetricErrors], [adaptation.MetricTimeouts],
// [adaptation.MetricFiltered] and [adaptation.MetricOptedOut], and
// observes the round trips in the histogram
// [adaptation.MetricRequestSeconds]; per plugin, field and action it
// counts the changes the plugin's grant does not allow,
// [adaptation.MetricDenied] (action "denied": refused; "audited": the
// grant is in audit mode and the change was applied); the gauge
// [adaptation.MetricPlugins] is the number of plugins receiving events.
// The series of a plugin that is gone are deleted (unless another plugin
// of the same name is registered), so plugins coming and going under ever
// new names do not grow them.
//
// It is a package of its own so that a runtime that does not ask for
// metrics does not link the Prometheus client (its package
// initialisation alone made an idle runtime process 1.8 MiB heavier).
package runtimemetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is an Adaptation's plugin metrics, registered with a
// Prometheus registerer. It is safe for concurrent use; one Metrics
// serves one Adaptation (two would count in the same series).
type Metrics struct {
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	timeouts *prometheus.CounterVec
	filtered *prometheus.CounterVec
	optedOut *prometheus.CounterVec
	denied   *prometheus.CounterVec
	plugins  prometheus.Gauge
}

var (
	_ adaptation.MetricsRecorder = (*Metrics)(nil)
	_ adaptation.RequestRecorder = (*Metrics)(nil)
	_ adaptation.DeniedRecorder  = (*Metrics)(nil)
	_ adaptation.AuditedRecorder = (*Metrics)(nil)
)

// New returns metrics registered with r. It fails if r is nil or refuses
// one of them (a name already registered, for one).
func New(r prometheus.Registerer) (*Metrics, error) {
	if r == nil {
		return nil, errors.New("runtimemetrics: nil registerer")
	}
	labels := []string{"plugin", "request"}
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricRequests, Help: "Requests sent to NRI plugins.",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    adaptation.MetricRequestSeconds,
			Help:    "Time NRI plugins took to answer requests.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricErrors, Help: "Requests NRI plugins failed (answered with an error, timed out or were lost).",
		}, labels),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricTimeouts, Help: "Requests NRI plugins did not answer in time.",
		}, labels),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricFiltered, Help: "Events not sent to NRI plugins because their object is outside the plugin's scope.",
		}, labels),
		optedOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricOptedOut, Help: "Events not sent to NRI plugins because the plugin opted out of their object.",
		}, labels),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: adaptation.MetricDenied, Help: "Changes in NRI plugins' answers their grant does not allow, by field and action (denied: refused; audited: applied, the grant is in audit mode).",
		}, []string{"plugin", "field", "action"}),
		plugins: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: adaptation.MetricPlugins, Help: "NRI plugins receiving events (synchronizing or active).",
		}),
	}
	var errs []error
	for _, c := range m.collectors() {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, c := range m.collectors() {
			r.Unregister(c)
		}
		return nil, fmt.Errorf("runtimemetrics: registering metrics: %w", err)
	}
	return m, nil
}

// collectors returns m's collectors.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.latency, m.errors, m.timeouts, m.filtered, m.optedOut, m.denied, m.plugins}
}

// RecordCall implements [adaptation.MetricsRecorder]. It does nothing:
// requests are counted by RecordRequest, which is told of Configure and
// Synchronize too.
func (m *Metrics) RecordCall(context.Context, adaptation.Call) {}

// RecordPluginCount implements [adaptation.MetricsRecorder]: it sets the
// plugin gauge.
func (m *Metrics) RecordPluginCount(n int) { m.plugins.Set(float64(n)) }

// RecordRequest implements [adaptation.RequestRecorder].
func (m *Metrics) RecordRequest(plugin, request string, took time.Duration, kind adaptation.FailureKind) {
	m.calls.WithLabelValues(plugin, request).Inc()
	m.latency.WithLabelValues(plugin, request).Observe(took.Seconds())
	if kind != 0 {
		m.errors.WithLabelValues(plugin, request).Inc()
	}
	if kind == adaptation.FailureTimeout {
		m.timeouts.WithLabelValues(plugin, request).Inc()
	}
}

// RecordFailure implements [adaptation.RequestRecorder].
func (m *Metrics) RecordFailure(plugin, request string) {
	m.errors.WithLabelValues(plugin, request).Inc()
}

// RecordDenied implements [adaptation.DeniedRecorder]: it counts a
// refused change, action "denied".
func (m *Metrics) RecordDenied(_ context.Context, plugin, field string) {
	m.denied.WithLabelValues(plugin, field, adaptation.ActionDenied).Inc()
}

// RecordAudited implements [adaptation.AuditedRecorder]: it counts an
// audited change, action "audited".
func (m *Metrics) RecordAudited(_ context.Context, plugin, field string) {
	m.denied.WithLabelValues(plugin, field, adaptation.ActionAudited).Inc()
}

// PluginSkips implements [adaptation.RequestRecorder]: it resolves the
// plugin's counters of skipped events once, so that counting one is an
// atomic add.
func (m *Metrics) PluginSkips(plugin string, events api.EventMask) adaptation.SkipCounter {
	c := &skips{}
	for _, e := range events.Events() {
		c.filtered[e] = m.filtered.WithLabelValues(plugin, e.Name())
		c.optedOut[e] = m.optedOut.WithLabelValues(plugin, e.Name())
	}
	return c
}

// ForgetPlugin implements [adaptation.RequestRecorder]: it deletes every
// series of the plugin.
func (m *Metrics) ForgetPlugin(plugin string) {
	l := prometheus.Labels{"plugin": plugin}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.calls, m.latency, m.errors, m.timeouts, m.filtered, m.optedOut, m.denied,
	} {
		v.DeletePartialMatch(l)
	}
}

// skips are one plugin's MetricFiltered and MetricOptedOut counters, by
// event.
type skips struct {
	filtered, optedOut [api.Event_LAST]prometheus.Counter
}

// Skipped implements [adaptation.SkipCounter].
func (c *skips) Skipped(e api.Event, optedOut bool) {
	if e < 0 || e >= api.Event_LAST {
		return
	}
	counter := c.filtered[e]
	if optedOut {
		counter = c.optedOut[e]
	}
	if counter != nil {
		counter.Inc()
	}
}
