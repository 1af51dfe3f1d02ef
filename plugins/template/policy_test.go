//go:build !wasip1

package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/nodepolicy"
)

// TestShippedGrantAllowsPlugin: the variable and the annotation the
// template sets pass its grant in the shipped node policy, and nothing
// more would.
func TestShippedGrantAllowsPlugin(t *testing.T) {
	pod := &api.PodSandbox{Id: "pod1", Name: "web", Namespace: "default"}
	ctr := &api.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "nginx"}
	adj, _, err := (&plugin{log: slog.New(slog.DiscardHandler)}).CreateContainer(context.Background(), pod, ctr)
	if err != nil || len(adj.GetEnv()) != 1 || len(adj.GetAnnotations()) != 1 {
		t.Fatalf("the plugin's adjustment: %v, %v", adj, err)
	}
	grant := nodepolicy.Load(t).GrantFor("60", "template")
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses the template's adjustment: %v", vs)
	}
	adj.AddEnv("NRI_OTHER", "x")
	if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 {
		t.Errorf("the shipped grant allows another variable: %v", vs)
	}
}
