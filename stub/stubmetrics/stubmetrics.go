// Package stubmetrics serves a plugin stub's Prometheus metrics and
// health endpoints: it is the [stub.Observer] a plugin installs with
// [stub.WithObserver] when it wants them.
//
//	m, err := stubmetrics.New("127.0.0.1:9090")
//	if err != nil { ... }
//	st, err := stub.New(plugin, stub.WithObserver(m))
//
// It is a package of its own so that a plugin that does not ask for
// metrics links neither the Prometheus client nor an HTTP server (their
// package initialisation alone made a plugin process ~4 MiB heavier than
// upstream's).
package stubmetrics

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nrikit/nrikit/internal/httpserve"
	"github.com/nrikit/nrikit/stub"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is a stub's metrics, in a registry of their own, served with
// health endpoints on a TCP listener while the stub runs (from
// [stub.Stub.Start] until [stub.Stub.Stop] or the end of [stub.Stub.Run]):
//
//   - /metrics: the registry (see [Metrics.Registry] and the Metric
//     constants of package stub), with the Go and process collectors;
//   - /readyz: 200 while the plugin is registered with the runtime, 503
//     otherwise;
//   - /livez: 200 while the connection is up, being established or being
//     re-established ([stub.WithReconnect]), 503 once the stub stopped or
//     gave up.
//
// Start fails if it cannot listen on the address; a failed Start stops
// serving. A Metrics serves one stub.
type Metrics struct {
	addr          string
	reg           *prometheus.Registry
	calls         *prometheus.CounterVec
	errors        *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	state         *prometheus.GaugeVec
	registrations prometheus.Counter
	reconnects    prometheus.Counter

	mu      sync.Mutex
	current stub.ConnState
	server  *httpserve.Server // nil while not serving
}

var _ stub.Observer = (*Metrics)(nil)

// states are the states the state gauge has a series for.
var states = []stub.ConnState{stub.StateConnecting, stub.StateRegistered, stub.StateStopped}

// New returns the metrics of a stub that will serve them on addr (such as
// "127.0.0.1:9090", or ":9090" for every interface; port 0 picks one,
// see [Metrics.Addr]).
func New(addr string) (*Metrics, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("stubmetrics: invalid address %q: %w", addr, err)
	}
	labels := []string{"handler"}
	m := &Metrics{
		addr: addr,
		reg:  prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: stub.MetricHandlerCalls, Help: "Calls of the NRI plugin's handlers.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: stub.MetricHandlerErrors, Help: "Calls of the NRI plugin's handlers that failed (returned an error or panicked).",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    stub.MetricHandlerSeconds,
			Help:    "Time the NRI plugin's handlers took.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, labels),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: stub.MetricConnectionState, Help: "1 for the current state of the NRI plugin's connection to the runtime.",
		}, []string{"state"}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: stub.MetricRegistrations, Help: "Successful registrations of the NRI plugin with the runtime.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: stub.MetricReconnects, Help: "Successful re-registrations of the NRI plugin after a lost connection.",
		}),
	}
	m.reg.MustRegister(m.calls, m.errors, m.latency, m.state, m.registrations, m.reconnects,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range states {
		m.state.WithLabelValues(s.String()).Set(0)
	}
	return m, nil
}

// Registry returns the registry served at /metrics, where a plugin may
// register its own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Addr returns the address the endpoints are served on (with the actual
// port when New was given port 0), or "" while they are not served.
func (m *Metrics) Addr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.server == nil {
		return ""
	}
	return m.server.Addr().String()
}

// Start starts serving the endpoints (see [stub.Observer]).
func (m *Metrics) Start(plugin string, log *slog.Logger) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.server != nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /readyz", probe(func() bool { return m.stateNow() == stub.StateRegistered }))
	mux.HandleFunc("GET /livez", probe(func() bool {
		s := m.stateNow()
		return s == stub.StateConnecting || s == stub.StateRegistered
	}))
	h, err := httpserve.Start(m.addr, mux, func(err error) {
		log.Error("serving metrics failed", "plugin", plugin, "error", err)
	})
	if err != nil {
		return fmt.Errorf("stubmetrics: serving metrics: %w", err)
	}
	m.server = h
	log.Info("serving metrics and health endpoints", "plugin", plugin, "address", h.Addr().String())
	return nil
}

// Stop stops serving the endpoints and waits until the server is done.
func (m *Metrics) Stop() {
	m.mu.Lock()
	h := m.server
	m.server = nil
	m.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

// Handled records a handler call; opt-outs do not count as errors.
func (m *Metrics) Handled(handler string, took time.Duration, err error) {
	m.calls.WithLabelValues(handler).Inc()
	m.latency.WithLabelValues(handler).Observe(took.Seconds())
	if err != nil && !stub.IsOptOut(err) {
		m.errors.WithLabelValues(handler).Inc()
	}
}

// StateChanged records the connection state.
func (m *Metrics) StateChanged(s stub.ConnState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.current
	if old == s {
		return
	}
	m.current = s
	if old != stub.StateIdle {
		m.state.WithLabelValues(old.String()).Set(0)
	}
	if s != stub.StateIdle {
		m.state.WithLabelValues(s.String()).Set(1)
	}
}

// Registered counts a registration.
func (m *Metrics) Registered(again bool) {
	m.registrations.Inc()
	if again {
		m.reconnects.Inc()
	}
}

// stateNow returns the connection state.
func (m *Metrics) stateNow() stub.ConnState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// probe answers a health check: 200 "ok" if ok reports true, 503
// otherwise.
func probe(ok func() bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ok")
			return
		}
		fmt.Fprintln(w, "ok")
	}
}
