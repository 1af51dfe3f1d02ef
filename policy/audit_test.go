package policy

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestAction checks the audit mode of issue 37 (item 8): a policy-wide
// action is the default of its grants, a grant's own overrides it, the
// summary and the error say audit, and an unknown action is a mistake
// with its line.
func TestAction(t *testing.T) {
	p := mustParse(t, `
action: audit
grants:
  - plugins: [strict]
    action: deny
    adjust: {env: [OK]}
  - plugins: [rollout]
    adjust: {env: [OK]}
default:
  action: audit
`)
	strict, rollout := p.GrantFor("10", "strict"), p.GrantFor("10", "rollout")
	if strict.Action() != ActionDeny || rollout.Action() != ActionAudit || p.GrantFor("10", "x").Action() != ActionAudit {
		t.Errorf("actions: strict %v, rollout %v, default %v", strict.Action(), rollout.Action(), p.GrantFor("10", "x").Action())
	}
	if !strings.HasSuffix(rollout.Summary(), " allows=env action=audit") || strings.Contains(strict.Summary(), "action=") {
		t.Errorf("summaries %q, %q", rollout.Summary(), strict.Summary())
	}
	if a := mustParse(t, "grants:\n  - plugins: [x]\n").GrantFor("10", "x").Action(); a != ActionDeny {
		t.Errorf("no action: %v, want deny", a)
	}
	adj := &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "BAD"}}}
	vs := rollout.CheckAdjustment(testPod, testCtr, adj)
	err := rollout.Deny("10-rollout", testPod, testCtr, vs)
	if err == nil || err.Action != ActionAudit || !strings.HasPrefix(err.Error(), "plugin 10-rollout: changes to container main (ctr-1) of pod gpu-workloads/attacker would be denied by the policy (audit): env \"BAD\"") {
		t.Errorf("audited error: %v", err)
	}
	if err := strict.Deny("10-strict", testPod, testCtr, strict.CheckAdjustment(testPod, testCtr, adj)); err == nil || err.Action != ActionDeny ||
		!strings.Contains(err.Error(), "denied by the policy: env") {
		t.Errorf("denied error: %v", err)
	}
	if err := rollout.Deny("10-rollout", testPod, testCtr, nil); err != nil {
		t.Errorf("no violations: %v", err)
	}
	for doc, want := range map[string]string{
		"action: warn\n": `policy.yaml:1: action: unknown action "warn": want deny or audit`,
		"grants:\n  - plugins: [x]\n    action: Audit\n": `policy.yaml:3: grants[0].action: unknown action "Audit": want deny or audit`,
	} {
		if _, err := Parse("policy.yaml", []byte(doc)); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
}
