package stub

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names of a stub's registry (see [WithMetricsAddr]). The handler
// metrics are labelled by handler: an event name ("CreateContainer", ...),
// "Configure", "Synchronize" or "Shutdown".
const (
	// MetricHandlerCalls counts the calls of the plugin's handlers.
	MetricHandlerCalls = "nri_stub_handler_calls_total"
	// MetricHandlerErrors counts the handler calls that returned an
	// error (a validator's rejection included, opt-outs excluded) or
	// panicked.
	MetricHandlerErrors = "nri_stub_handler_errors_total"
	// MetricHandlerSeconds is the time the handlers took.
	MetricHandlerSeconds = "nri_stub_handler_duration_seconds"
	// MetricConnectionState is 1 for the stub's current state, labelled
	// state: "connecting" (connecting, registering or waiting to
	// reconnect), "registered" or "stopped", and 0 for the others.
	MetricConnectionState = "nri_stub_connection_state"
	// MetricRegistrations counts the successful registrations with the
	// runtime, the first one included.
	MetricRegistrations = "nri_stub_registrations_total"
	// MetricReconnects counts the successful re-registrations after a
	// lost connection (see [WithReconnect]).
	MetricReconnects = "nri_stub_reconnects_total"
)

// connState is a stub's connection state, for metrics and health.
type connState int32

const (
	stateIdle       connState = iota // not started
	stateConnecting                  // connecting, registering or reconnecting
	stateRegistered                  // registered with the runtime
	stateStopped                     // stopped or gave up
)

var stateNames = [...]string{stateConnecting: "connecting", stateRegistered: "registered", stateStopped: "stopped"}

// stubMetrics are a stub's metrics, in its own registry. A nil
// *stubMetrics records nothing.
type stubMetrics struct {
	reg           *prometheus.Registry
	calls         *prometheus.CounterVec
	errors        *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	state         *prometheus.GaugeVec
	registrations prometheus.Counter
	reconnects    prometheus.Counter

	mu      sync.Mutex
	current connState
}

func newStubMetrics() *stubMetrics {
	labels := []string{"handler"}
	m := &stubMetrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHandlerCalls, Help: "Calls of the NRI plugin's handlers.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHandlerErrors, Help: "Calls of the NRI plugin's handlers that failed (returned an error or panicked).",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricHandlerSeconds,
			Help:    "Time the NRI plugin's handlers took.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, labels),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricConnectionState, Help: "1 for the current state of the NRI plugin's connection to the runtime.",
		}, []string{"state"}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricRegistrations, Help: "Successful registrations of the NRI plugin with the runtime.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricReconnects, Help: "Successful re-registrations of the NRI plugin after a lost connection.",
		}),
	}
	m.reg.MustRegister(m.calls, m.errors, m.latency, m.state, m.registrations, m.reconnects,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, name := range stateNames {
		if name != "" {
			m.state.WithLabelValues(name).Set(0)
		}
	}
	return m
}

// observe records a handler call.
func (m *stubMetrics) observe(handler string, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(handler).Inc()
	m.latency.WithLabelValues(handler).Observe(took.Seconds())
	if err != nil && !errors.Is(err, ErrNotInterestedInPod) && !errors.Is(err, ErrNotInterestedInContainer) {
		m.errors.WithLabelValues(handler).Inc()
	}
}

// setState records the connection state.
func (m *stubMetrics) setState(s connState) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.current
	if old == s {
		return
	}
	m.current = s
	if name := stateNames[old]; name != "" {
		m.state.WithLabelValues(name).Set(0)
	}
	m.state.WithLabelValues(stateNames[s]).Set(1)
}

// stateNow returns the connection state.
func (m *stubMetrics) stateNow() connState {
	if m == nil {
		return stateIdle
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// registered records a successful registration; again says it followed
// a lost connection.
func (m *stubMetrics) registered(again bool) {
	if m == nil {
		return
	}
	m.registrations.Inc()
	if again {
		m.reconnects.Inc()
	}
	m.setState(stateRegistered)
}
