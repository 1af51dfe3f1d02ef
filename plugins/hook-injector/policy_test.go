package hookinjector

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/nodepolicy"
)

// ctkHook is a hook file as NVIDIA's toolkit writes them: nvidia-ctk's
// hook subcommand, with its arguments, and no environment (the env
// given is appended).
func ctkHook(args string, env ...string) string {
	e := ""
	if len(env) > 0 {
		e = `, "env": ["` + env[0] + `"]`
	}
	return `{"version": "1.0.0", "hook": {"path": "/usr/bin/nvidia-ctk", "args": ` + args + e + `, "timeout": 10},
		"when": {"always": true}, "stages": ["createContainer"]}`
}

// TestShippedGrantAllowsDeployedPlugin: with hook files for nvidia-ctk and
// for a shell, the plugin configured as its overlay injects nvidia-ctk
// only, with the arguments of its hook subcommand, which its grant in the
// shipped node policy allows; with its allowlist wide open it injects the
// shell too, which the grant refuses (the second line); the grant refuses
// nvidia-ctk run as anything but a hook (its config subcommand rewrites
// the host's configuration) and with an environment (LD_PRELOAD), which
// the plugin's own rules, over paths and stages, let through; and the
// grant names the overlay's executables.
func TestShippedGrantAllowsDeployedPlugin(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "10-ctk.json", ctkHook(`["nvidia-ctk", "hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"]`))
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
	if h := adj.GetHooks().GetCreateContainer()[0]; len(h.GetArgs()) != 5 || len(h.GetEnv()) != 0 {
		t.Fatalf("the deployed plugin's hook: %v, want the file's arguments and no environment", h)
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

	for name, file := range map[string]string{
		"another subcommand": ctkHook(`["nvidia-ctk", "config", "--in-place", "--set", "nvidia-container-cli.root=/tmp"]`),
		"an environment":     ctkHook(`["nvidia-ctk", "hook", "update-ldcache"]`, "LD_PRELOAD=/tmp/x.so"),
	} {
		hooksDir := t.TempDir()
		writeHook(t, hooksDir, "10-ctk.json", file)
		cfg.HooksDirs = []string{hooksDir}
		if err := p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		adj, _, err := p.CreateContainer(context.Background(), pod, ctr)
		if err != nil || len(adj.GetHooks().GetCreateContainer()) != 1 {
			t.Fatalf("%s: the deployed plugin's adjustment: %v, %v", name, adj, err)
		}
		if vs := grant.CheckAdjustment(pod, ctr, adj); len(vs) != 1 || vs[0].Field.String() != "hooks" {
			t.Errorf("%s: the shipped grant's violations: %v, want one of hooks", name, vs)
		}
	}

	var paths, granted []string
	for _, r := range cfg.Hooks {
		paths = append(paths, r.Path)
	}
	g := nodepolicy.Grant(t, Name)
	if g.Adjust != nil {
		for _, h := range g.Adjust.Hooks {
			granted = append(granted, h.Path)
		}
	}
	if g.Where != nil || !slices.Equal(granted, paths) {
		t.Errorf("the grant %+v, the overlay's executables %v", g, paths)
	}
}
