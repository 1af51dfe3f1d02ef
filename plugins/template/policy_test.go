//go:build !wasip1

package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
)

// shippedPolicy is the node policy nrikit ships with the overlays
// (deploy/README.md, "The node's policy"), relative to this directory in
// nrikit's repository. A copy of the template in a module of its own has
// none: this test is skipped there (and imports only nrikit's public
// packages, so that the copy builds its tests).
const shippedPolicy = "../../deploy/policy/policy.yaml"

// TestShippedGrantAllowsPlugin: the variable and the annotation the
// template sets pass its grant in the shipped node policy, and nothing
// more would.
func TestShippedGrantAllowsPlugin(t *testing.T) {
	pol, err := policy.LoadUntrusted(shippedPolicy)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no %s: not in nrikit's repository", shippedPolicy)
	}
	if err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod1", Name: "web", Namespace: "default"}
	ctr := &api.Container{Id: "ctr1", PodSandboxId: "pod1", Name: "nginx"}
	adj, _, err := (&plugin{log: slog.New(slog.DiscardHandler)}).CreateContainer(context.Background(), pod, ctr)
	if err != nil || len(adj.GetEnv()) != 1 || len(adj.GetAnnotations()) != 1 {
		t.Fatalf("the plugin's adjustment: %v, %v", adj, err)
	}
	grant := pol.GrantFor("60", "template")
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses the template's adjustment: %v", vs)
	}
	adj.AddEnv("NRI_OTHER", "x")
	if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 {
		t.Errorf("the shipped grant allows another variable: %v", vs)
	}
}
