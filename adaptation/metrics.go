package adaptation

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the per-plugin metrics registered by WithMetrics. A nil
// *metrics records nothing.
type metrics struct {
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	timeouts *prometheus.CounterVec
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
)

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	if r == nil {
		return nil, nil
	}
	labels := []string{"plugin", "request"}
	m := &metrics{
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
		plugins: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricPlugins, Help: "NRI plugins receiving events (synchronizing or active).",
		}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.calls, m.latency, m.errors, m.timeouts, m.plugins} {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("adaptation: registering metrics: %w", err)
	}
	return m, nil
}

// observe records one request.
func (m *metrics) observe(plugin, request string, d time.Duration, kind FailureKind) {
	if m == nil {
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

// setPlugins records the number of plugins receiving events.
func (m *metrics) setPlugins(n int) {
	if m == nil {
		return
	}
	m.plugins.Set(float64(n))
}
