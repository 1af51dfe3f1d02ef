package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/cmd/nri/internal/simulator"
	"github.com/nrikit/nrikit/internal/httpserve"
	"github.com/nrikit/nrikit/internal/sockfile"
)

func newServeCommand(g *globals) *cobra.Command {
	var (
		f        runtimeFlags
		socket   string
		scenario string
		wait     int
		timeout  time.Duration
		keep     bool
		metrics  string
	)
	c := &cobra.Command{
		Use:   "serve --socket PATH",
		Short: "Serve external plugins on a socket, then play a scenario for them",
		Long: `Run the simulated runtime listening on a unix socket for external plugins, written in
any language. nri serve waits until --wait-plugins plugins have registered (and been
synchronized), plays the scenario (by default the built-in serve scenario, cmd/nri/examples/serve.yaml)
and prints the report. Registration failures are printed as they happen, with the reason the
runtime gave the plugin. If the plugins do not register within --timeout, nri serve exits
with status 4, naming what is missing. The scenario's plugins and those of --plugin and
--plugin-dir (executables, or WebAssembly modules loaded in-process) take part as in nri run.
With --keep it keeps serving after the report, until interrupted. With --metrics-addr it serves the runtime library's Prometheus metrics
(nri_plugin_requests_total, ...) at /metrics on that TCP address.`,
		Example: `  # Terminal 1: wait for one plugin.
  nri serve --socket /tmp/nri.sock --wait-plugins 1

  # Terminal 2: any plugin, for example a sample one, or your own.
  nri plugin logger -idx 10 -socket /tmp/nri.sock

  # Your scenario, JSON report, keep serving afterwards.
  nri serve --socket /tmp/nri.sock --scenario my.yaml --wait-plugins 2 --timeout 1m --output json --keep

  # The runtime library's metrics at http://127.0.0.1:9090/metrics.
  nri serve --socket /tmp/nri.sock --metrics-addr 127.0.0.1:9090 --keep`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if socket == "" {
				return codef(exitUsage, "--socket PATH is required")
			}
			if err := sockfile.CheckPath(socket); err != nil {
				return codef(exitUsage, "invalid --socket: %v", err)
			}
			if wait < 0 {
				return codef(exitUsage, "invalid --wait-plugins %d: want 0 or more", wait)
			}
			if timeout <= 0 {
				return codef(exitUsage, "invalid --timeout %v: want a positive duration", timeout)
			}
			name, data := serveScenario()
			sc, err := loadScenario(scenario, name, data)
			if err != nil {
				return err
			}
			extra := []simulator.Option{simulator.WithSocketPath(socket),
				simulator.WithRegistrationErrors(func(plugin, reason string) {
					g.notice(slog.LevelError, fmt.Sprintf("plugin %s not registered: %s", plugin, reason),
						slog.String("plugin", plugin), slog.String("reason", reason))
				})}
			var ms *metricsServer
			if metrics != "" {
				if ms, err = listenMetrics(metrics); err != nil {
					return codef(exitUsage, "--metrics-addr: %v", err)
				}
				defer ms.Close()
				extra = append(extra, simulator.WithMetrics(ms.reg))
				g.notice(slog.LevelInfo, fmt.Sprintf("serving metrics on http://%s/metrics", ms.Addr()))
			}
			opts, err := f.simulatorOptions(g, extra...)
			if err != nil {
				return err
			}
			sim, err := simulator.New(sc, opts...)
			if err != nil {
				return err
			}
			return serve(c.Context(), g, &f, sim, socket, wait, timeout, keep)
		},
	}
	f.register(c)
	fl := c.Flags()
	fl.StringVar(&socket, "socket", "", "unix socket to listen on for external plugins (required)")
	fl.StringVar(&scenario, "scenario", "", "scenario file to play (default: the built-in cmd/nri/examples/serve.yaml)")
	fl.IntVar(&wait, "wait-plugins", 1, "number of external plugins to wait for before playing")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for the plugins")
	fl.BoolVar(&keep, "keep", false, "keep serving after the report, until interrupted")
	fl.StringVar(&metrics, "metrics-addr", "", "serve the runtime library's Prometheus metrics at /metrics on this TCP address, such as 127.0.0.1:9090 (default: off)")
	return c
}

// metricsServer serves a registry of the runtime library's metrics.
type metricsServer struct {
	reg *prometheus.Registry
	*httpserve.Server
}

// listenMetrics starts serving a new registry at /metrics on addr.
func listenMetrics(addr string) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv, err := httpserve.Start(addr, mux, nil)
	if err != nil {
		return nil, err
	}
	return &metricsServer{reg: reg, Server: srv}, nil
}

func serve(ctx context.Context, g *globals, f *runtimeFlags, s *simulator.Simulator, socket string, wait int, timeout time.Duration, keep bool) (err error) {
	defer func() { err = errors.Join(err, stop(s)) }()
	if err := s.Start(ctx); err != nil {
		return startError(err)
	}
	g.notice(slog.LevelInfo, fmt.Sprintf("listening on %s, waiting for %d plugin(s) (up to %v)", socket, wait, timeout),
		slog.String("socket", socket))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	err = s.WaitForPlugins(wctx, wait)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return withCode(exitPlugins, fmt.Errorf("--timeout %v expired: %w", timeout, err))
	}
	r, err := s.Play(ctx)
	if err != nil {
		return err
	}
	if err := f.writeReport(g, r); err != nil {
		return err
	}
	if keep {
		g.notice(slog.LevelInfo, fmt.Sprintf("still serving on %s; interrupt to stop", socket))
		<-ctx.Done()
	}
	return result(r)
}
