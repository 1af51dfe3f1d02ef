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
	for _, k := range []string{"scenario", "runtime", "ok", "failures", "plugins", "registrationErrors", "events", "containers", "durationMs"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
	if doc["failures"] == nil || doc["registrationErrors"] == nil {
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
