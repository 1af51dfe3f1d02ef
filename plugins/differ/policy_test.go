package differ

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/nodepolicy"
)

// TestShippedGrantAllowsPlugin: the plugin is an observer, and its grant
// in the shipped node policy allows no change: its answers to
// CreateContainer and UpdateContainer change nothing, which the grant
// allows.
func TestShippedGrantAllowsPlugin(t *testing.T) {
	grant := nodepolicy.Load(t).GrantFor("10", Name)
	if !grant.Capabilities().Empty() || nodepolicy.Grant(t, Name).Where != nil {
		t.Errorf("the shipped grant of an observer allows %s", grant.Capabilities())
	}
	p := New(slog.New(slog.DiscardHandler), nil)
	pod := &api.PodSandbox{Id: "pod-1", Name: "p", Namespace: "default"}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c", Env: []string{"A=1"}}
	adj, updates, err := p.CreateContainer(context.Background(), pod, ctr)
	if err != nil || updates != nil {
		t.Fatalf("CreateContainer: %v, %v", updates, err)
	}
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses the plugin's adjustment: %v", vs)
	}
	updates, err = p.UpdateContainer(context.Background(), pod, ctr, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1 << 30)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		if vs := grant.CheckUpdate(pod, ctr, u); vs != nil {
			t.Errorf("the shipped grant refuses the plugin's update: %v", vs)
		}
	}
	if len(updates) != 0 {
		t.Errorf("an observer updated containers: %v", updates)
	}
}
