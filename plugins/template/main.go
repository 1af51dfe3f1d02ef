// Command template is a minimal NRI plugin to copy when writing a new one.
//
// It injects an environment variable and an annotation into every
// container being created, and logs the pod and container events it
// receives. See README.md for how to build, install and adapt it.
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
	"github.com/nrikit/nrikit/stub"
)

// What the plugin injects. A real plugin would usually take these from its
// configuration (see Configure below).
const (
	injectedEnvName    = "NRI_TEMPLATE"
	injectedEnvValue   = "injected-by-nri-template"
	injectedAnnotation = "template.nrikit.io/seen"
)

// plugin is the plugin itself. The stub finds out which events it handles
// by looking at which handler interfaces (stub.CreateContainerInterface,
// stub.RunPodInterface, ...) it implements, and subscribes it to exactly
// those. To handle another event, add its method; to stop handling one,
// delete the method. Nothing else needs to change.
//
// The stub may call handlers concurrently (the runtime can have several
// requests in flight), so any state shared between handlers must be
// protected. This plugin has none besides its logger, which is safe for
// concurrent use.
type plugin struct {
	log *slog.Logger
}

// Configure is called once per connection, before any event. config is the
// plugin's configuration from the runtime (often empty). Returning 0 keeps
// the default subscription (every implemented event the runtime supports);
// returning an error makes the registration fail with that message.
func (p *plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	p.log.Info("configured", "runtime", runtime, "version", version, "config", config)
	return 0, nil
}

// Synchronize hands the plugin every pod and container that exists when it
// connects (again after a reconnection). A plugin with state rebuilds it
// here; it may also return updates for existing containers.
func (p *plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.log.Info("synchronized", "pods", len(pods), "containers", len(ctrs))
	return nil, nil
}

// Shutdown is called when the runtime shuts down; the stub stops after it
// returns.
func (p *plugin) Shutdown(context.Context) {
	p.log.Info("runtime is shutting down")
}

// RunPodSandbox is called when a pod is started. Return
// stub.ErrNotInterestedInPod to get no further events about the pod from a
// nrikit runtime.
func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log.Info("pod started", "pod", podName(pod))
	return nil
}

// StopPodSandbox is called when a pod is stopped.
func (p *plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log.Info("pod stopped", "pod", podName(pod))
	return nil
}

// CreateContainer is called while a container is being created: the place
// to adjust it. The adjustment is merged with those of other plugins; two
// plugins setting the same thing is a conflict that fails the creation.
// Returning an error also fails the creation.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.log.Info("container being created", "pod", podName(pod), "container", ctr.GetName())
	adjust := &api.ContainerAdjustment{
		Env:         []*api.KeyValue{{Key: injectedEnvName, Value: injectedEnvValue}},
		Annotations: map[string]string{injectedAnnotation: "true"},
	}
	// The second result could update other, existing containers.
	return adjust, nil, nil
}

// StartContainer is called when a container is being started.
func (p *plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.log.Info("container starting", "pod", podName(pod), "container", ctr.GetName())
	return nil
}

// RemoveContainer is called after a container was removed.
func (p *plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.log.Info("container removed", "pod", podName(pod), "container", ctr.GetName())
	return nil
}

func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
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
		opts = append(opts, stub.WithMetricsAddr(set.metricsAddr))
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
