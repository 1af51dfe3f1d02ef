package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/ocispec"
)

func sample() *Report {
	return &Report{
		Scenario: "s", Runtime: "rt 1", OK: true,
		Plugins: []Plugin{{Name: "logger", Index: "10", ID: "10-logger", Kind: "pre-installed", PID: 42, Events: []string{"CreateContainer"}, Calls: 3, Filtered: 1}},
		Events: []Event{
			{Step: 1, Event: "CreateContainer", Pod: "p", Namespace: "ns", Container: "c", Called: []string{"10-logger"}, OK: true,
				Changes: []Change{{Plugin: "10-logger", Container: "c", Field: "env[A]", Value: "1"}, {Plugin: "10-logger", Container: "c", Field: "env[B]", Removed: true}}},
			{Step: 2, Event: "CreateContainer", Pod: "p", Namespace: "ns", Container: "d", Error: "rejected", ExpectedError: "rejected", OK: true, Filtered: []string{"20-x"}},
		},
		Containers: []Container{
			{Pod: "p", Namespace: "ns", Name: "c", State: "running", Env: []string{"A=1"}, Spec: &rspec.Spec{Version: "1.2.0"},
				Diff: []ocispec.Change{{Path: "process.env[A]", Kind: ocispec.Added, New: "1"}}},
			{Pod: "p", Namespace: "ns", Name: "d", State: "failed", Error: "rejected"},
		},
	}
}

func TestWriteJSONKeys(t *testing.T) {
	r := sample()
	r.Plugins[0].Events = nil
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "runtime", "policy", "ok", "failures", "plugins", "registrationErrors", "lost", "events", "containers", "durationMs"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
	if doc["failures"] == nil || doc["registrationErrors"] == nil || doc["lost"] == nil {
		t.Error("empty lists encoded as null")
	}
	ev := doc["events"].([]any)[1].(map[string]any)
	if ev["called"] == nil || ev["changes"] == nil || ev["calls"] == nil {
		t.Errorf("empty event lists encoded as null: %v", ev)
	}
	if doc["plugins"].([]any)[0].(map[string]any)["events"] == nil {
		t.Error("empty plugin events encoded as null")
	}
	if r.Plugins[0].Events != nil || r.Events[1].Called != nil {
		t.Error("WriteJSON changed the report")
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().WriteText(&buf, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`NRI scenario "s" (runtime rt 1)`,
		"10-logger  pre-installed pid 42",
		"ns/p/c",
		"called   10-logger",
		"filtered 20-x",
		"+ env[A] = 1",
		"- env[B]",
		"failed, as expected",
		"error    rejected",
		"+ process.env[A]: 1",
		"OK 2 steps",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour without TextOptions.Color")
	}
	buf.Reset()
	r := sample()
	r.OK, r.Failures = false, []string{"step 2: boom"}
	r.Events[1].OK = false
	if err := r.WriteText(&buf, TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "\x1b[31mFAILED") || !strings.Contains(out, "step 2: boom") || !strings.Contains(out, "UNEXPECTED") {
		t.Errorf("failed report:\n%s", out)
	}
}

// TestWriteTextRefusedAndLost checks how the text names the policy in
// force, a refused answer (its changes marked, each violation, as
// expected or not), a failed request, a plugin lost during the run and
// a grant naming a plugin without its extension.
func TestWriteTextRefusedAndLost(t *testing.T) {
	r := sample()
	r.OK = false
	r.Policy = &Policy{Source: "scenario", File: "s.yaml", Line: 20}
	r.Plugins[0].Grant, r.Plugins[0].Refused, r.Plugins[0].Errors = "s.yaml:22: grants[0]", 1, 1
	r.Plugins = append(r.Plugins,
		Plugin{Name: "hang", Index: "60", ID: "60-hang", Kind: "pre-installed", PID: 43, State: StateLost, Errors: 1, Grant: "s.yaml: no default grant"},
		Plugin{Name: "x.wasm", Index: "70", ID: "70-x.wasm", Kind: "wasm", Grant: "s.yaml: no default grant", GrantNotes: []string{"s.yaml:25: grants[1] names x"}})
	r.Lost = []Lost{{Plugin: "60-hang", Step: 1, Event: "CreateContainer", Reason: `plugin "60-hang" did not answer CreateContainer within 1s; the runtime disconnected it`}}
	e := &r.Events[0]
	e.OK = false
	e.Changes[0].Refused, e.Changes[1].Refused = true, true
	e.Calls = []Call{
		{Plugin: "10-logger", Error: "denied", Refused: true, Violations: []Violation{{Field: "env", Value: `"A"`, Reason: "name not allowed", Rule: "s.yaml:23: grants[0].adjust.env", Action: ActionRefused}}},
		{Plugin: "60-hang", Error: `plugin "60-hang" did not answer CreateContainer within 1s`},
		{Plugin: "70-x.wasm", Error: "denied", Refused: true, Expected: true},
	}
	r.Failures = []string{"step 1 (createContainer c): the runtime refused 10-logger's answer", "plugin 60-hang was lost at step 1 (CreateContainer): ..."}
	var buf bytes.Buffer
	if err := r.WriteText(&buf, TextOptions{Calls: true}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"policy: the scenario's, s.yaml:20\n",
		"3 calls, 1 filtered, 1 refused  grant grants[0] (line 22)\n",
		"60-hang    pre-installed pid 43       0 calls, 0 filtered, 1 failed  grant none (may change nothing)\n",
		`           LOST at step 1 (CreateContainer): plugin "60-hang" did not answer CreateContainer within 1s; the runtime disconnected it` + "\n",
		"           note: s.yaml:25: grants[1] names x, not x.wasm: a plugin is named after its file, extension included\n",
		"+ env[A] = 1  (refused)\n",
		"- env[B]  (refused)\n",
		"        refused  10-logger (none of its changes applied)\n" +
			"                 env \"A\" denied: name not allowed (s.yaml:23: grants[0].adjust.env)\n",
		`        failed   60-hang: plugin "60-hang" did not answer CreateContainer within 1s` + "\n",
		"        refused  70-x.wasm (none of its changes applied, as expected)\n                 denied\n" +
			"                 note: s.yaml:25: grants[1] names x, not x.wasm: a plugin is named after its file, extension included\n",
		"call     10-logger                   0.00ms refused: denied\n",
		"ns/p/c  (container running at the end)\n",
		"ns/p/d  (its creation failed)\n",
		"FAILED 1 of 2 steps did not go as expected, and 1 plugin was lost:\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	r.Policy = nil
	r.Failures = r.Failures[1:]
	if err := r.WriteText(&buf, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "policy: none (every plugin may change everything)\n") ||
		!strings.Contains(out, "FAILED 1 plugin was lost (2 steps played):\n") || strings.Contains(out, " grant ") {
		t.Errorf("without a policy, only a plugin lost:\n%s", out)
	}
}
