// Package nrirt drives nrikit's adaptation for the benchmarks: a runtime
// with the plugins of a plugin directory, the benchmark's existing
// containers, and prepared requests.
package nrirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"google.golang.org/protobuf/proto"
)

// Runtime is a started nrikit Adaptation.
type Runtime struct {
	a        *adaptation.Adaptation
	create   *api.CreateContainerRequest
	reqs     []*api.CreateContainerRequest
	poststrt *api.PostStartContainerRequest
	day      []func(context.Context) error // see PrepareDay
}

// PluginEnv is the environment the benchmark's runtimes give their
// plugins: the entries of $BENCH_PLUGIN_ENV, separated by white space
// (such as BENCH_CPUPROFILE_DIR=/tmp/pprof).
func PluginEnv() []string { return strings.Fields(os.Getenv("BENCH_PLUGIN_ENV")) }

// Start starts an Adaptation with the pre-installed plugins in dir; pods
// and ctrs are what it lists for Synchronize; opts come after the
// benchmark's own options (no configuration directory, no external
// connections, no log). It returns once every plugin is synchronized.
func Start(ctx context.Context, dir string, pods []*api.PodSandbox, ctrs []*api.Container, opts ...adaptation.Option) (*Runtime, error) {
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return pods, ctrs, nil }
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	opts = append([]adaptation.Option{
		adaptation.WithPluginDir(dir), adaptation.WithConfigDir(""),
		adaptation.WithDisabledExternalConnections(),
		adaptation.WithLogger(slog.New(slog.DiscardHandler)),
		adaptation.WithPluginEnv(PluginEnv()...),
	}, opts...)
	a, err := adaptation.New("bench-runtime", "v1", list, update, opts...)
	if err != nil {
		return nil, fmt.Errorf("nrirt: %w", err)
	}
	if err := a.Start(ctx); err != nil {
		return nil, fmt.Errorf("nrirt: %w", err)
	}
	return &Runtime{a: a, create: workload.CreateRequest(0), poststrt: workload.PostStartRequest(0)}, nil
}

// Prepare builds n fresh CreateContainer requests for Create.
func (r *Runtime) Prepare(n int) {
	r.reqs = make([]*api.CreateContainerRequest, n)
	for i := range r.reqs {
		r.reqs[i] = proto.Clone(r.create).(*api.CreateContainerRequest)
	}
}

// Create sends prepared request i and returns the number of environment
// variables in the merged adjustment.
func (r *Runtime) Create(ctx context.Context, i int) (int, error) {
	rsp, err := r.a.CreateContainer(ctx, r.reqs[i])
	if err != nil {
		return 0, err
	}
	return len(rsp.GetAdjust().GetEnv()), nil
}

// PostStart sends the PostStartContainer notification.
func (r *Runtime) PostStart(ctx context.Context) error {
	return r.a.PostStartContainer(ctx, r.poststrt)
}

// Plugins returns the number of active plugins.
func (r *Runtime) Plugins() int {
	n := 0
	for _, p := range r.a.Plugins() {
		if p.State == adaptation.StateActive {
			n++
		}
	}
	return n
}

// Stop stops the Adaptation and its plugins.
func (r *Runtime) Stop(ctx context.Context) error {
	if err := r.a.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("nrirt: %w", err)
	}
	return nil
}
