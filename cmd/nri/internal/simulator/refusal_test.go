package simulator

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// refusedScenario is the helper scenario with a policy that refuses
// plugin two's variable: its answers are refused, plugin one's are not.
// %EXPECT% is the createContainer step's expectRefused.
func refusedScenario(expect string) string {
	head := helperScenario[:strings.Index(helperScenario, "policy:")]
	return head + `policy:
  grants:
    - plugins: [one]
      adjust: {env: ["HELPER_*"]}
    - plugins: [two]
      adjust: {env: [OTHER]}
steps:
  - runPod: p
  - createContainer: a
` + expect + `  - removeContainer: a
  - stopPod: p
  - removePod: p
`
}

// TestPlayRefused checks that an answer the policy refuses is marked
// refused in the report, with its violations, counts as the plugin's
// failure and fails the step, unless the step expects it.
func TestPlayRefused(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := play(t, refusedScenario(""), "env")
	if r.OK || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "step 2 (createContainer a): the runtime refused 20-two's answer to CreateContainer") ||
		!strings.Contains(r.Failures[0], `env "HELPER_two" denied`) {
		t.Errorf("failures %q, want step 2's refusal of 20-two", r.Failures)
	}
	if r.Policy == nil || r.Policy.Source != "scenario" || r.Policy.File != "helpers.yaml" || r.Policy.Line != 22 {
		t.Errorf("policy %+v, want the scenario's at helpers.yaml:22", r.Policy)
	}
	create := event(r, "CreateContainer", "a")
	if create == nil || create.OK {
		t.Fatalf("CreateContainer a: %+v, want not OK", create)
	}
	var two *report.Call
	for i := range create.Calls {
		if c := &create.Calls[i]; c.Plugin == "20-two" {
			two = c
		} else if c.Refused || c.Error != "" {
			t.Errorf("call %+v refused", c)
		}
	}
	want := report.Violation{Field: "env", Value: `"HELPER_two"`, Reason: "name not allowed", Rule: "helpers.yaml:27: grants[1].adjust.env", Action: "refused"}
	if two == nil || !two.Refused || two.Expected || len(two.Violations) != 1 || two.Violations[0] != want ||
		!strings.Contains(two.Error, "plugin 20-two: changes to container a") {
		t.Errorf("20-two's call %+v, want refused with %+v", two, want)
	}
	for _, c := range create.Changes {
		if c.Refused != (c.Plugin == "20-two") {
			t.Errorf("change %+v: refused %v", c, c.Refused)
		}
	}
	for _, p := range r.Plugins {
		refused := 0
		if p.ID == "20-two" {
			refused = 1
		}
		if p.Refused != refused || p.Errors != refused || p.State != report.StateRegistered || !strings.HasPrefix(p.Grant, "helpers.yaml:") {
			t.Errorf("plugin %+v, want %d refused", p, refused)
		}
	}
	if a := reportedContainer(r, "a"); slices.Contains(a.Env, "HELPER_two=1") || !slices.Contains(a.Env, "HELPER_one=1") {
		t.Errorf("container a's environment %v: want plugin one's variable only", a.Env)
	}

	// Expected, by name or IDX-NAME, the refusal passes.
	for _, name := range []string{"two", "20-two"} {
		r = play(t, refusedScenario("    expectRefused: ["+name+"]\n"), "env")
		if !r.OK {
			t.Errorf("expectRefused: [%s]: failures %q", name, r.Failures)
		}
		if c := event(r, "CreateContainer", "a"); c == nil || !c.OK || !slices.ContainsFunc(c.Calls, func(c report.Call) bool { return c.Refused && c.Expected }) {
			t.Errorf("expectRefused: [%s]: CreateContainer a %+v", name, c)
		}
	}
	// A refusal expected that does not happen fails the step.
	r = play(t, refusedScenario("    expectRefused: [two, one]\n"), "env")
	if r.OK || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "expected the runtime to refuse one's answer") {
		t.Errorf("an expected refusal of one that did not happen: failures %q", r.Failures)
	}
}

// TestPlayLost checks that a plugin the runtime drops during the run (it
// timed out) stays in the report's plugins, marked lost, and is in its
// lost list with the step, the event and why; the run fails.
func TestPlayLost(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := play(t, helperScenario, "hang", WithTimeouts(10*time.Second, testscale.D(time.Second)))
	if r.OK {
		t.Fatal("the run succeeded")
	}
	if len(r.Lost) != 1 || r.Lost[0].Plugin != "20-two" || r.Lost[0].Step != 2 || r.Lost[0].Event != "CreateContainer" ||
		!strings.Contains(r.Lost[0].Reason, "did not answer CreateContainer within") || !strings.Contains(r.Lost[0].Reason, "disconnected") {
		t.Errorf("lost %+v, want 20-two at step 2 (CreateContainer), timed out", r.Lost)
	}
	var ids []string
	for _, p := range r.Plugins {
		ids = append(ids, p.ID+"/"+p.State)
	}
	if !slices.Equal(ids, []string{"10-one/registered", "20-two/lost"}) {
		t.Errorf("plugins %v, want 20-two kept, lost", ids)
	}
	if !slices.ContainsFunc(r.Failures, func(f string) bool {
		return strings.HasPrefix(f, "plugin 20-two was lost at step 2 (CreateContainer): ")
	}) {
		t.Errorf("failures %q lack the lost plugin", r.Failures)
	}
	if len(r.RegistrationErrors) != 0 {
		t.Errorf("registration errors %+v: the plugin registered", r.RegistrationErrors)
	}
}

// TestPlayAudited checks that an answer a grant in audit mode does not
// allow is applied and marked audited in the report, with its
// violations, and neither fails the step nor counts as the plugin's
// failure; expecting it refused fails the step.
func TestPlayAudited(t *testing.T) {
	defer goleak.VerifyNone(t)
	audit := func(expect string) string {
		return strings.Replace(refusedScenario(expect), "adjust: {env: [OTHER]}", "adjust: {env: [OTHER]}\n      action: audit", 1)
	}
	r := play(t, audit(""), "env")
	if !r.OK || len(r.Failures) != 0 {
		t.Errorf("failures %q, want none: the grant audits", r.Failures)
	}
	create := event(r, "CreateContainer", "a")
	if create == nil || !create.OK {
		t.Fatalf("CreateContainer a: %+v, want OK", create)
	}
	var two *report.Call
	for i := range create.Calls {
		if c := &create.Calls[i]; c.Plugin == "20-two" {
			two = c
		}
	}
	want := report.Violation{Field: "env", Value: `"HELPER_two"`, Reason: "name not allowed", Rule: "helpers.yaml:27: grants[1].adjust.env", Action: "audited"}
	if two == nil || !two.Audited || two.Refused || two.Error != "" || len(two.Violations) != 1 || two.Violations[0] != want {
		t.Errorf("20-two's call %+v, want audited with %+v", two, want)
	}
	for _, c := range create.Changes {
		if c.Refused || c.Audited != (c.Plugin == "20-two") {
			t.Errorf("change %+v: want audited only for 20-two, never refused", c)
		}
	}
	for _, p := range r.Plugins {
		audited := 0
		if p.ID == "20-two" {
			audited = 1
		}
		if p.Audited != audited || p.Refused != 0 || p.Errors != 0 {
			t.Errorf("plugin %+v, want %d audited, nothing failed", p, audited)
		}
	}
	if a := reportedContainer(r, "a"); !slices.Contains(a.Env, "HELPER_two=1") {
		t.Errorf("container a's environment %v: want plugin two's variable applied", a.Env)
	}
	var text strings.Builder
	if err := r.WriteText(&text, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"1 audited", "audited  20-two (its changes applied: its grant is in audit mode)",
		`env "HELPER_two" would be denied: name not allowed (helpers.yaml:27: grants[1].adjust.env)`, "(audited)"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("the text report has no %q:\n%s", line, text.String())
		}
	}

	r = play(t, audit("    expectRefused: [two]\n"), "env")
	if r.OK || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "expected the runtime to refuse two's answer") {
		t.Errorf("an audited answer expected refused: failures %q", r.Failures)
	}
}
