package stub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Timeouts of the metrics and health server (see [WithMetricsAddr]).
const (
	healthReadHeaderTimeout = 5 * time.Second
	healthReadTimeout       = 10 * time.Second
	healthWriteTimeout      = 30 * time.Second
	healthIdleTimeout       = time.Minute
	healthShutdownGrace     = 5 * time.Second
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
	return st.health.ln.Addr().String()
}

// healthServer serves a stub's metrics and health endpoints.
type healthServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve returned
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
	ln, err := net.Listen("tcp", st.c.cfg.metricsAddr)
	if err != nil {
		return fmt.Errorf("stub: serving metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /readyz", probe(func() bool { return m.stateNow() == stateRegistered }))
	mux.HandleFunc("GET /livez", probe(func() bool {
		s := m.stateNow()
		return s == stateConnecting || s == stateRegistered
	}))
	h := &healthServer{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: healthReadHeaderTimeout,
			ReadTimeout:       healthReadTimeout,
			WriteTimeout:      healthWriteTimeout,
			IdleTimeout:       healthIdleTimeout,
			MaxHeaderBytes:    1 << 16,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			st.c.log.Error("serving metrics failed", "plugin", st.c.name, "error", err)
		}
	}()
	st.health = h
	st.c.log.Info("serving metrics and health endpoints", "plugin", st.c.name, "address", ln.Addr().String())
	return nil
}

// stopHealth stops serving the metrics and health endpoints and waits
// until the server is done.
func (st *Stub) stopHealth() {
	st.mu.Lock()
	h := st.health
	st.health = nil
	st.mu.Unlock()
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthShutdownGrace)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		_ = h.srv.Close()
	}
	<-h.done
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
