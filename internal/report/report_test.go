package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

func TestFields(t *testing.T) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("FOO", "bar")
	adj.RemoveEnv("OLD")
	adj.AddMount(&api.Mount{Destination: "/data", Source: "/srv", Type: "bind", Options: []string{"rbind", "ro"}})
	adj.AddDevice(&api.LinuxDevice{Path: "/dev/x", Type: "c", Major: 1, Minor: 3, FileMode: &api.OptionalFileMode{Value: 0o666}})
	adj.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=0"})
	adj.AddRlimit("RLIMIT_NOFILE", 10, 5)
	adj.AddAnnotation("a", "b")
	adj.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "x"}}}})
	adj.SetLinuxMemoryLimit(1024)
	adj.SetLinuxCPUSetCPUs("0-1")
	adj.SetArgs([]string{"sh", "-c"})
	want := map[string]string{
		"env[FOO]":                      "bar",
		"env[-OLD]":                     "",
		"mounts[/data]":                 "type=bind source=/srv options=[rbind ro]",
		"linux.devices[/dev/x]":         "type=c major=1 minor=3 file_mode=0666",
		"CDI_devices[vendor.com/gpu=0]": present,
		"rlimits[RLIMIT_NOFILE]":        "hard=10 soft=5",
		"annotations[a]":                "b",
		"hooks.prestart[0]":             "path=/bin/hook args=[hook x]",
		"linux.resources.memory.limit":  "1024",
		"linux.resources.cpu.cpus":      "0-1",
		"args[0]":                       "sh",
		"args[1]":                       "-c",
	}
	got := Fields(adj)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s = %q", k, got[k])
		}
	}
	if paths := SortedPaths(got); len(paths) != len(got) || paths[0] != "CDI_devices[vendor.com/gpu=0]" {
		t.Errorf("SortedPaths = %v", paths)
	}
	if len(Fields(nil)) != 0 || len(Fields(&api.ContainerAdjustment{})) != 0 {
		t.Error("empty messages have fields")
	}
	// Enums by name, device cgroup rules (no key) by index.
	res := Fields(&api.LinuxResources{Devices: []*api.LinuxDeviceCgroup{{Allow: true, Access: "rw"}}})
	if res["devices[0]"] != "allow=true access=rw" {
		t.Errorf("cgroup rule: %v", res)
	}
	prio := Fields(&api.LinuxIOPriority{Class: api.IOPrioClass_IOPRIO_CLASS_BE})
	if prio["class"] != "IOPRIO_CLASS_BE" {
		t.Errorf("enum: %v", prio)
	}
}

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
				Diff: []SpecChange{{Path: "process.env[A]", Kind: "added", New: "1"}}},
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
