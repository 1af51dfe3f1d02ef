package gpuenv

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
)

// TestShippedGrantAllowsDeployedPlugin: what the plugin, configured as its
// overlay, sets in a GPU pod's container (its variables, the GPU the
// pod's annotation names) passes its grant in the shipped node policy, a
// variable it was not configured with does not, and the grant's scope is
// the plugin's: its namespaces and its default pod selector.
func TestShippedGrantAllowsDeployedPlugin(t *testing.T) {
	var log bytes.Buffer
	config := nodepolicy.OverlayConfig(t, Name)
	pod := &api.PodSandbox{Id: "pod-1", Name: "train", Namespace: "gpu-workloads", Labels: map[string]string{"accel": "gpu"},
		Annotations: map[string]string{VisibleDevicesAnnotation + "/pod": "0"}}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c"}
	adj, _, err := configured(t, nil, config, &log).CreateContainer(context.Background(), pod, ctr)
	if err != nil || envOf(adj)[VisibleDevicesEnv] != "0" || len(adj.GetEnv()) != 2 {
		t.Fatalf("the deployed plugin's adjustment: %v, %v", adj, err)
	}
	grant := nodepolicy.Load(t).GrantFor("50", Name)
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses what the deployed plugin is for: %v", vs)
	}
	adj.AddEnv("LD_PRELOAD", "/tmp/x.so")
	if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 || vs[0].Field.String() != "env" {
		t.Errorf("the shipped grant allows a variable the plugin does not set: %v", vs)
	}

	cfg, err := ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	g := nodepolicy.Grant(t, Name)
	if g.Where == nil || !slices.Equal(g.Where.Namespaces, cfg.Namespaces) || len(cfg.Namespaces) == 0 ||
		g.Where.PodLabelSelector != DefaultScope().GetPodLabelSelector() {
		t.Errorf("where %+v, the overlay's namespaces %v and the plugin's scope %v", g.Where, cfg.Namespaces, DefaultScope())
	}
	if names := slices.Sorted(maps.Keys(cfg.Env)); g.Adjust == nil || !slices.Equal(slices.Sorted(slices.Values(g.Adjust.Env)), names) {
		t.Errorf("the grant's variables %v, the overlay's %v", g.Adjust, names)
	}
}
