package hookinjector

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/nodepolicy"
)

// TestShippedGrantAllowsDeployedPlugin: with hook files for nvidia-ctk and
// for a shell, the plugin configured as its overlay injects nvidia-ctk
// only, which its grant in the shipped node policy allows; with its
// allowlist wide open it injects the shell too, which the grant refuses
// (the second line), and the grant names the overlay's executables.
func TestShippedGrantAllowsDeployedPlugin(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "10-ctk.json", hook("/usr/bin/nvidia-ctk", `{"always": true}`, "createContainer"))
	writeHook(t, dir, "20-shell.json", hook("/bin/sh", `{"always": true}`, "createRuntime"))
	cfg, err := ParseConfig(nodepolicy.OverlayConfig(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	cfg.HooksDirs = []string{dir}
	p := New(slog.New(slog.DiscardHandler), nil)
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod-1", Name: "p", Namespace: "default"}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c"}
	adj, _, err := p.CreateContainer(context.Background(), pod, ctr)
	if err != nil || len(adj.GetHooks().GetCreateContainer()) != 1 || len(adj.GetHooks().GetCreateRuntime()) != 0 {
		t.Fatalf("the deployed plugin's adjustment: %v, %v", adj, err)
	}
	grant := nodepolicy.Load(t).GrantFor("30", Name)
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses what the deployed plugin is for: %v", vs)
	}

	wide := cfg
	wide.Hooks = append(slices.Clone(cfg.Hooks), HookRule{Path: "/bin/*", Stages: Stages()})
	if err := p.Reload(wide); err != nil {
		t.Fatal(err)
	}
	adj, _, err = p.CreateContainer(context.Background(), pod, ctr)
	if err != nil || len(adj.GetHooks().GetCreateRuntime()) != 1 {
		t.Fatalf("the wide-open plugin's adjustment: %v, %v", adj, err)
	}
	if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 || vs[0].Field.String() != "hooks" || vs[0].Value == "" {
		t.Errorf("the shipped grant's violations of a shell hook: %v, want one of hooks", vs)
	}

	var paths []string
	for _, r := range cfg.Hooks {
		paths = append(paths, r.Path)
	}
	if g := nodepolicy.Grant(t, Name); g.Where != nil || g.Adjust == nil || !slices.Equal(g.Adjust.Hooks, paths) {
		t.Errorf("the grant %+v, the overlay's executables %v", g, paths)
	}
}
