package conformance

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
)

// TestCheckPluginPolicy checks the plugin's answers against its grant, as
// a runtime with the policy would: the checker's pods are brought into
// the grant's where (the events are sent), and CheckGrant fails naming
// each change the grant does not allow, or passes naming the grant.
func TestCheckPluginPolicy(t *testing.T) {
	check := func(doc string) *Report {
		t.Helper()
		pol, err := policy.Parse("policy.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		r, err := CheckPlugin(testContext(t), PluginConfig{Command: helperCommand("stub-good"), Env: helperEnvVars(), Policy: pol})
		if err != nil {
			t.Fatalf("CheckPlugin: %v", err)
		}
		return r
	}
	r := check("grants:\n  - plugins: [check-target]\n    where: {namespaces: [team-a]}\n    adjust: {env: [GOOD, REMOVED]}\n")
	if res := requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER)); !res.Passed || !strings.Contains(res.Reason, "env[GOOD]") {
		t.Errorf("CreateContainer %+v: want it sent (the pod brought into the grant's where) and its changes named", res)
	}
	res := requireCheck(t, r, CheckGrant)
	if res.Passed || !strings.Contains(res.Reason, "10-check-target's grant is policy.yaml:2: grants[0]") ||
		!strings.Contains(res.Reason, `CreateContainer: annotations "checked-by" denied: not granted (policy.yaml:2: grants[0] (no adjust.annotations))`) ||
		!strings.Contains(res.Reason, `CreateContainer: mounts`) || strings.Contains(res.Reason, `env "GOOD"`) {
		t.Errorf("%s: %+v, want a failure naming the annotation and the mount, not the variable", CheckGrant, res)
	}
	r = check("default:\n  adjust: {env: [\"*\"], annotations: [\"*\"], mounts: {types: [tmpfs]}}\n")
	if res := requireCheck(t, r, CheckGrant); !res.Passed || !strings.Contains(res.Reason, "policy.yaml:1: default, which allows every answer") {
		t.Errorf("%s under a grant allowing every change: %+v\n%s", CheckGrant, res, renderText(t, r))
	}
	r, err := CheckPlugin(testContext(t), PluginConfig{Command: helperCommand("stub-good"), Env: helperEnvVars()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Result(CheckGrant); ok {
		t.Errorf("%s without a policy", CheckGrant)
	}
}

// TestDefaultPluginName checks that a launched or WASM plugin is named
// after its file when that is IDX-NAME, as a runtime names the plugins of
// its plugin directory, else DefaultPluginName.
func TestDefaultPluginName(t *testing.T) {
	for cmd, want := range map[string]string{
		"/opt/nri/plugins/50-mine": "50-mine",
		"./10-template.wasm":       "10-template.wasm",
		"./mine":                   DefaultPluginName,
		"node":                     DefaultPluginName,
	} {
		cfg, err := PluginConfig{Command: []string{cmd}}.withDefaults()
		if err != nil || cfg.Name != want {
			t.Errorf("the plugin %s is named %q (%v), want %q", cmd, cfg.Name, err, want)
		}
	}
}

// TestAdjusted checks how an answer to CreateContainer is summarized:
// every kind of field by name, the first few of them.
func TestAdjusted(t *testing.T) {
	adj := &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "A", Value: "1"}, {Key: "-B"}}}
	adj.SetLinuxMemoryLimit(1 << 20)
	if got := adjusted(adj); got != "env[A], env[B] (removed), linux.resources.memory.limit" {
		t.Errorf("adjusted = %q", got)
	}
	if got := adjusted(nil); got != "nothing" {
		t.Errorf("adjusted(nil) = %q", got)
	}
	for _, k := range []string{"C", "D", "E", "F", "G"} {
		adj.Env = append(adj.Env, &api.KeyValue{Key: k, Value: "1"})
	}
	if got := adjusted(adj); !strings.HasSuffix(got, " and 2 more") {
		t.Errorf("adjusted of 8 fields = %q", got)
	}
}
