package ulimitadjuster

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
)

// TestShippedGrantAllowsDeployedPlugin: the limits the plugin, configured
// as its overlay, sets at its caps pass its grant in the shipped node
// policy, whose caps and namespaces are the overlay's.
func TestShippedGrantAllowsDeployedPlugin(t *testing.T) {
	var log bytes.Buffer
	config := nodepolicy.OverlayConfig(t, Name)
	pod := &api.PodSandbox{Id: "pod-1", Name: "train", Namespace: "gpu-workloads", Annotations: map[string]string{
		Annotation + "/pod": "- {type: nofile, soft: 1048576, hard: 1048576}\n- {type: memlock, soft: 1048576, hard: 67108864}\n",
	}}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c"}
	adj, _, err := configured(t, config, &log).CreateContainer(context.Background(), pod, ctr)
	if err != nil || len(adj.GetRlimits()) != 2 {
		t.Fatalf("the deployed plugin's adjustment: %v, %v", adj, err)
	}
	grant := nodepolicy.Load(t).GrantFor("40", Name)
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses what the deployed plugin is for: %v", vs)
	}
	adj.AddRlimit("RLIMIT_NOFILE", 1048577, 1024)
	if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 || vs[0].Field.String() != "rlimits" {
		t.Errorf("the shipped grant allows a limit over the plugin's cap: %v", vs)
	}

	cfg, err := ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	g := nodepolicy.Grant(t, Name)
	if g.Where == nil || !slices.Equal(g.Where.Namespaces, cfg.Namespaces) || len(cfg.Namespaces) == 0 {
		t.Errorf("where %+v, the overlay's namespaces %v", g.Where, cfg.Namespaces)
	}
	if g.Adjust == nil || len(g.Adjust.Rlimits) != len(cfg.Limits) {
		t.Fatalf("the grant's rlimits %+v, the overlay's %v", g.Adjust, cfg.Limits)
	}
	for typ, limit := range cfg.Limits {
		if c, ok := g.Adjust.Rlimits[typ]; !ok || c.Hard != uint64(limit) || c.Soft != uint64(limit) {
			t.Errorf("%s: the grant's caps %+v, the overlay's %s", typ, c, limit)
		}
	}
}
