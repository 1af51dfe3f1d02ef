//go:build !wasip1

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubmetrics"
)

// toldCapabilities returns the capabilities the runtime told, from the
// Configure handler's context.
func toldCapabilities(ctx context.Context) (capability.Set, bool) {
	return stub.ToldCapabilities(ctx)
}

// run parses the command line, connects to the runtime and serves until
// the runtime shuts the plugin down or a signal arrives. Logs go to
// stderr, or to the file named by -log-file.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var set settings
	fs.StringVar(&set.name, "name", "", "plugin name (default: from the runtime, or the executable's name)")
	fs.StringVar(&set.idx, "idx", "", "plugin index, two digits (default: from the runtime, or the executable's name)")
	fs.StringVar(&set.socket, "socket", api.DefaultSocketPath, "runtime socket, for a plugin started by hand")
	fs.BoolVar(&set.reconnect, "reconnect", true, "reconnect when the connection to the runtime is lost (a runtime restart; plugins started by hand only)")
	logFile := fs.String("log-file", "", "append log lines to this file (created with mode 0640) instead of stderr")
	fs.StringVar(&set.metricsAddr, "metrics-addr", "", "serve /metrics, /readyz and /livez on this TCP address, such as 127.0.0.1:9090 (default: off)")
	configFile := fs.String("config", "", "read the plugin's configuration from this file (the runtime's, if it sends one, wins)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			fmt.Fprintln(stderr, "template: -config:", err)
			return err
		}
		set.config = string(data)
	}

	// A runtime may start the plugin with stderr on /dev/null (containerd
	// and CRI-O do): a log file keeps what it says.
	out := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			fmt.Fprintln(stderr, "template:", err)
			return err
		}
		defer f.Close()
		out = f
	}
	logger := slog.New(slog.NewTextHandler(out, nil))
	err := serve(ctx, logger, set)
	if err != nil {
		logger.Error("plugin failed", "error", err)
	}
	return err
}

// settings are the command line's.
type settings struct {
	name, idx, socket, metricsAddr string
	config                         string // the -config file's content
	reconnect                      bool
}

// serve runs the plugin's stub. With a metrics address, the stub serves
// Prometheus metrics (/metrics) and health checks for Kubernetes probes:
// /readyz (registered with the runtime) and /livez (connected or
// reconnecting).
func serve(ctx context.Context, logger *slog.Logger, set settings) error {
	// Relax the garbage collector while a large node's snapshot arrives
	// (see stub.DefaultSyncGCPercent).
	opts := []stub.Option{stub.WithLogger(logger), stub.WithSocketPath(set.socket), stub.WithSyncGCPercent(stub.DefaultSyncGCPercent)}
	if set.name != "" {
		opts = append(opts, stub.WithPluginName(set.name))
	}
	if set.idx != "" {
		opts = append(opts, stub.WithPluginIdx(set.idx))
	}
	if set.metricsAddr != "" {
		m, err := stubmetrics.New(set.metricsAddr)
		if err != nil {
			return err
		}
		opts = append(opts, stub.WithObserver(m))
	}
	if set.config != "" {
		// Configure gets the file's configuration when the runtime sends
		// none (external plugins, such as a DaemonSet's, get none).
		opts = append(opts, stub.WithDefaultConfig(set.config))
	}
	var s *stub.Stub
	if set.reconnect {
		// Reconnect when the runtime goes away (it restarted), but not
		// after a Shutdown: a runtime sends it to dismiss the plugin, for
		// example because a newer connection of it replaces this one.
		opts = append(opts, stub.WithReconnect(time.Second, 30*time.Second), stub.WithOnClose(func(reason error) {
			if errors.Is(reason, stub.ErrShutdown) {
				s.Stop()
			}
		}))
	}

	s, err := stub.New(&plugin{log: logger}, opts...)
	if errors.Is(err, stub.ErrNoIndex) {
		return errors.New("-idx is required: give the plugin's two-digit index (such as -idx 10), or name the executable IDX-NAME (such as 10-template)")
	}
	if err != nil {
		return fmt.Errorf("creating plugin: %w", err)
	}
	err = s.Run(ctx)
	switch {
	case errors.Is(err, stub.ErrShutdown), errors.Is(err, context.Canceled):
		// The runtime or the administrator stopped us: not an error.
		return nil
	case err != nil:
		return fmt.Errorf("plugin %s: %w", s.Name(), err)
	}
	return nil
}

func main() {
	// A plugin process waits for the runtime nearly all the time: one P
	// makes each request cheaper for the runtime and the plugin (see
	// stub.TuneProcess for the trade-off). Delete this line if your
	// handlers compute in parallel.
	stub.TuneProcess()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		stop()
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(1)
	}
}
