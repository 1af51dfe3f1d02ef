// Command upstream is the benchmark plugin built on upstream's stub
// (containerd/nri v0.12.5): the same handlers as the nrikit plugin. A
// plugin with a namespace filters in its handler, as upstream plugins
// must (upstream has no runtime-side scopes).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	"github.com/containerd/nri/pkg/stub"

	"github.com/nrikit/nrikit/interop/bench/internal/pluginconf"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

type plugin struct{ cfg pluginconf.Config }

func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if p.cfg.Namespace != "" && pod.GetNamespace() != p.cfg.Namespace {
		return nil, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(p.cfg.EnvKey, p.cfg.EnvValue)
	return adj, nil, nil
}

func (p *plugin) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}

func (p *plugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	// The snapshot is decoded: the peak of the Synchronize rows.
	return nil, workload.RecordPeak(p.cfg.PeakFile)
}

// quiet discards upstream's log messages, as the nrikit stub does by
// default.
type quiet struct{}

func (quiet) Debugf(context.Context, string, ...interface{}) {}
func (quiet) Infof(context.Context, string, ...interface{})  {}
func (quiet) Warnf(context.Context, string, ...interface{})  {}
func (quiet) Errorf(context.Context, string, ...interface{}) {}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "upstream bench plugin:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := pluginconf.Load()
	if err != nil {
		return err
	}
	nrilog.Set(quiet{})
	st, err := stub.New(&plugin{cfg: cfg}, stub.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := st.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
