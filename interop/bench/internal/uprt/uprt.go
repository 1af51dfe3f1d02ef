// Package uprt drives upstream's adaptation (containerd/nri v0.12.5) for
// the benchmarks, with the same plugins, containers and request bytes as
// package nrirt.
package uprt

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	nrilog "github.com/containerd/nri/pkg/log"
	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"google.golang.org/protobuf/proto"
)

// quiet discards upstream's log messages (nrikit's default).
type quiet struct{}

func (quiet) Debugf(context.Context, string, ...interface{}) {}
func (quiet) Infof(context.Context, string, ...interface{})  {}
func (quiet) Warnf(context.Context, string, ...interface{})  {}
func (quiet) Errorf(context.Context, string, ...interface{}) {}

// Silence makes upstream's logging quiet; upstream's logger is global.
func Silence() { nrilog.Set(quiet{}) }

// convert decodes the wire bytes of an nrikit message into upstream's
// message of the same name.
func convert[M proto.Message](from proto.Message, to M) M {
	buf, err := proto.Marshal(from)
	if err != nil {
		panic(fmt.Sprintf("uprt: marshal: %v", err))
	}
	if err := proto.Unmarshal(buf, to); err != nil {
		panic(fmt.Sprintf("uprt: unmarshal: %v", err))
	}
	return to
}

// Existing converts a listing of nrikit objects to upstream's types.
func Existing(pods []*nriapi.PodSandbox, ctrs []*nriapi.Container) ([]*api.PodSandbox, []*api.Container) {
	up := make([]*api.PodSandbox, len(pods))
	for i, p := range pods {
		up[i] = convert(p, &api.PodSandbox{})
	}
	uc := make([]*api.Container, len(ctrs))
	for i, c := range ctrs {
		uc[i] = convert(c, &api.Container{})
	}
	return up, uc
}

// Runtime is a started upstream Adaptation.
type Runtime struct {
	a        *adaptation.Adaptation
	create   *api.CreateContainerRequest
	reqs     []*api.CreateContainerRequest
	poststrt *api.PostStartContainerRequest
	day      []func(context.Context) error // see PrepareDay
	synced   atomic.Int64
}

// Start starts an upstream Adaptation with the pre-installed plugins in
// dir; pods and ctrs (upstream's types, see Existing) are what it hands
// to Synchronize; opts come after the benchmark's own options (an empty
// configuration directory, no external connections). It returns once the
// plugins are synchronized (or failed to: upstream drops them with a log
// message, see Plugins).
func Start(_ context.Context, dir string, pods []*api.PodSandbox, ctrs []*api.Container, opts ...adaptation.Option) (*Runtime, error) {
	Silence()
	r := &Runtime{
		create:   convert(workload.CreateRequest(0), &api.CreateContainerRequest{}),
		poststrt: convert(workload.PostStartRequest(0), &api.PostStartContainerRequest{}),
	}
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		_, err := cb(ctx, pods, ctrs)
		return err
	}
	updateFn := func(context.Context, []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) { return nil, nil }
	confDir, err := os.MkdirTemp("", "uprt-conf")
	if err != nil {
		return nil, fmt.Errorf("uprt: %w", err)
	}
	defer os.RemoveAll(confDir)
	opts = append([]adaptation.Option{
		adaptation.WithPluginPath(dir), adaptation.WithPluginConfigPath(confDir),
		adaptation.WithDisabledExternalConnections(),
		adaptation.WithMetrics(&counter{r: r}),
	}, opts...)
	a, err := adaptation.New("bench-runtime", "v1", syncFn, updateFn, opts...)
	if err != nil {
		return nil, fmt.Errorf("uprt: %w", err)
	}
	if err := a.Start(); err != nil {
		return nil, fmt.Errorf("uprt: %w", err)
	}
	r.a = a
	return r, nil
}

// Prepare builds n fresh CreateContainer requests for Create (upstream
// applies the adjustments to the request it is given).
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

// Plugins returns the number of plugins upstream reported last.
func (r *Runtime) Plugins() int { return int(r.synced.Load()) }

// Stop stops the Adaptation and its plugins.
func (r *Runtime) Stop(context.Context) error {
	r.a.Stop()
	return nil
}

// counter is upstream's Metrics doing nothing but tracking the plugin
// count (upstream has no other way to list its plugins).
type counter struct{ r *Runtime }

func (c *counter) RecordPluginInvocation(string, string, error)                               {}
func (c *counter) RecordPluginLatency(string, string, time.Duration)                          {}
func (c *counter) RecordPluginAdjustments(string, string, *api.ContainerAdjustment, int, int) {}
func (c *counter) UpdatePluginCount(n int)                                                    { c.r.synced.Store(int64(n)) }
