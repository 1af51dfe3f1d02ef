package stub

import (
	"fmt"
	"net"
	"net/http"

	"github.com/nrikit/nrikit/internal/httpserve"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// WithMetricsAddr makes the stub serve, on a TCP listener at addr (such
// as "127.0.0.1:9090", or ":9090" for every interface), from [Stub.Start]
// until [Stub.Stop] or the end of [Stub.Run]:
//
//   - /metrics: the stub's own Prometheus registry (see
//     [Stub.MetricsRegistry] and the Metric constants), with the Go and
//     process collectors;
//   - /readyz: 200 while the plugin is registered with the runtime, 503
//     otherwise;
//   - /livez: 200 while the connection is up, being established or being
//     re-established ([WithReconnect]), 503 once the stub stopped or gave
//     up.
//
// Start fails if it cannot listen on addr; a failed Start stops serving.
// The option has no effect for [NewBuiltin].
func WithMetricsAddr(addr string) Option {
	return func(c *config) error {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("stub: WithMetricsAddr: invalid address %q: %w", addr, err)
		}
		c.metricsAddr = addr
		return nil
	}
}

// MetricsRegistry returns the stub's Prometheus registry, served at
// /metrics, where a plugin may register its own metrics; nil without
// [WithMetricsAddr].
func (st *Stub) MetricsRegistry() *prometheus.Registry {
	if st.c.metrics == nil {
		return nil
	}
	return st.c.metrics.reg
}

// MetricsAddr returns the address the metrics and health endpoints are
// served on (with the actual port when [WithMetricsAddr] asked for port
// 0), or "" while they are not served.
func (st *Stub) MetricsAddr() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.health == nil {
		return ""
	}
	return st.health.Addr().String()
}

// startHealth starts serving the metrics and health endpoints, unless
// they are off or already served (by a previous lifetime not yet stopped).
func (st *Stub) startHealth() error {
	m := st.c.metrics
	if m == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.health != nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /readyz", probe(func() bool { return m.stateNow() == stateRegistered }))
	mux.HandleFunc("GET /livez", probe(func() bool {
		s := m.stateNow()
		return s == stateConnecting || s == stateRegistered
	}))
	h, err := httpserve.Start(st.c.cfg.metricsAddr, mux, func(err error) {
		st.c.log.Error("serving metrics failed", "plugin", st.c.name, "error", err)
	})
	if err != nil {
		return fmt.Errorf("stub: serving metrics: %w", err)
	}
	st.health = h
	st.c.log.Info("serving metrics and health endpoints", "plugin", st.c.name, "address", h.Addr().String())
	return nil
}

// stopHealth stops serving the metrics and health endpoints and waits
// until the server is done.
func (st *Stub) stopHealth() {
	st.mu.Lock()
	h := st.health
	st.health = nil
	st.mu.Unlock()
	if h != nil {
		h.Close()
	}
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
