package runtimemetrics

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/stub"
	"github.com/prometheus/client_golang/prometheus"
)

// legacyRecorder is an embedder's recorder written for the DeniedRecorder
// that took no action: plugin and field, for refusals.
type legacyRecorder struct {
	mu     sync.Mutex
	denied []string // "plugin field"
}

func (r *legacyRecorder) RecordCall(context.Context, adaptation.Call) {}
func (r *legacyRecorder) RecordPluginCount(int)                       {}
func (r *legacyRecorder) RecordDenied(_ context.Context, plugin, field string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.denied = append(r.denied, plugin+" "+field)
}

func (r *legacyRecorder) told() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.denied...)
}

// envSetter is a plugin that sets BAD in every container it is told of.
type envSetter struct{}

func (envSetter) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("BAD", "1")
	return adj, nil, nil
}

// TestDeniedAndAudited: an embedder's recorder with the DeniedRecorder
// method of before audit mode (plugin, field) is still told of a refused
// change, and not of an audited one; the Prometheus metrics, installed
// beside it, count both, by action.
func TestDeniedAndAudited(t *testing.T) {
	const doc = `
grants:
- plugins: [strict]
  adjust: {env: ["OK_*"]}
- plugins: [rollout]
  action: audit
  adjust: {env: ["OK_*"]}
`
	pol, err := policy.Parse("policy.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var _ adaptation.DeniedRecorder = (*legacyRecorder)(nil)
	legacy := &legacyRecorder{}
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := []adaptation.Option{adaptation.WithDisabledExternalConnections(), adaptation.WithPluginDir(t.TempDir()),
		adaptation.WithPolicy(pol), adaptation.WithMetricsRecorder(legacy), adaptation.WithMetricsRecorder(m)}
	for _, name := range []string{"strict", "rollout"} {
		svc, err := stub.NewBuiltin(envSetter{})
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, adaptation.WithBuiltinPlugin("10", name, svc))
	}
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return nil, nil, nil }
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("test-runtime", "v1", list, update, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(ctx)

	pod := &api.PodSandbox{Id: "pod0", Name: "pod-0", Namespace: "default", Uid: "uid-0"}
	ctr := &api.Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr-0"}
	if err := a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}

	if got := legacy.told(); len(got) != 1 || got[0] != "10-strict env" {
		t.Errorf("the embedder's recorder was told of %q, want the refusal of 10-strict's env alone", got)
	}
	checkSeries(t, gather(t, reg), map[string]float64{
		"nri_plugin_denied_total{action=denied,field=env,plugin=10-strict}":   1,
		"nri_plugin_denied_total{action=audited,field=env,plugin=10-rollout}": 1,
	}, "nri_plugin_denied_total{action=audited,field=env,plugin=10-strict}",
		"nri_plugin_denied_total{action=denied,field=env,plugin=10-rollout}")
}
