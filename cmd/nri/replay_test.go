package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordScenario is a GPU pod with two containers through gpu-env and
// the recorder, which keeps gpu-env's annotation in clear (gpu-env reads
// it) and redacts the rest.
const recordScenario = `name: record
pods:
  - name: trainer
    namespace: ml
    labels: {accel: gpu}
    annotations:
      gpu-env.nrikit.dev/visible-devices/pod: "1"
      secret.example.com/token: hunter2
containers:
  - {name: train, pod: trainer, env: [PASSWORD=hunter2]}
  - {name: eval, pod: trainer}
plugins:
  - name: gpu-env
    index: "50"
    config: |
      namespaces: [ml]
      visibleDevices: ["[0-3]"]
  - name: recorder
    index: "99"
    args: [-out=%s, -keep-annotation=gpu-env.nrikit.dev/*]
steps:
  - runPod: trainer
  - createContainer: train
  - startContainer: train
  - createContainer: eval
  - stopContainer: train
  - removeContainer: train
`

// gpuEnvPlugin writes a launcher 50-gpu-env that runs nri's gpu-env with
// the configuration config.
func gpuEnvPlugin(t *testing.T, dir, config string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "gpu-env.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "50-gpu-env")
	script := fmt.Sprintf("#!/bin/sh\nexec %s plugin gpu-env -config %s\n", nriBinary, conf)
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

type replayJSON struct {
	Against string `json:"against"`
	Summary struct {
		Events, Pods, Containers, Differ int
		ByField                          []struct {
			Name       string `json:"name"`
			Containers int    `json:"containers"`
		} `json:"byField"`
	} `json:"summary"`
	Containers []struct {
		Name    string `json:"name"`
		Differs bool   `json:"differs"`
		Basis   string `json:"basis"`
		Error   string `json:"error"`
		Changes []struct {
			Path string `json:"path"`
			Old  string `json:"old"`
			New  string `json:"new"`
		} `json:"changes"`
	} `json:"containers"`
	Warnings []string `json:"warnings"`
}

// TestRecordReplay records a scenario with the recorder plugin, then
// replays the recording against gpu-env as it was (nothing differs),
// with another configuration (the changed variable, in both containers),
// and under a policy refusing one of its variables (its answer refused:
// both variables gone).
func TestRecordReplay(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "node.nrirec")
	sc := filepath.Join(dir, "record.yaml")
	if err := os.WriteFile(sc, []byte(fmt.Sprintf(recordScenario, rec)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := nri(t, "run", sc); r.code != 0 {
		t.Fatalf("nri run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if info, err := os.Stat(rec); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("recording: %v, %v", info, err)
	}
	raw, _ := os.ReadFile(rec)
	if strings.Contains(string(raw), "hunter2") {
		t.Error("recording holds a secret in clear")
	}
	same := gpuEnvPlugin(t, filepath.Join(dir, "same"), "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\n")
	changed := gpuEnvPlugin(t, filepath.Join(dir, "changed"), "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\nenv: {NVIDIA_VISIBLE_DEVICES: void, NVIDIA_DRIVER_CAPABILITIES: all}\n")
	key := rec + ".key"

	run := func(args ...string) (int, replayJSON, string) {
		t.Helper()
		r := nri(t, append([]string{"replay", rec, "--output", "json"}, args...)...)
		var out replayJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("nri replay %v: %d %v\n%s\n%s", args, r.code, err, r.stdout, r.stderr)
		}
		return r.code, out, r.stdout
	}

	code, out, raw2 := run("--plugin", same, "--key-file", key)
	if code != 0 || out.Summary.Differ != 0 || out.Summary.Containers != 2 || out.Summary.Pods != 1 {
		t.Fatalf("same plugin: status %d, %s", code, raw2)
	}
	for _, c := range out.Containers {
		if c.Basis != "validation" {
			t.Errorf("%s: basis %q, want validation", c.Name, c.Basis)
		}
	}

	code, out, raw2 = run("--plugin", changed, "--key-file", key)
	if code != 1 || out.Summary.Differ != 2 {
		t.Fatalf("changed configuration: status %d, %s", code, raw2)
	}
	for _, c := range out.Containers {
		if len(c.Changes) != 1 || c.Changes[0].Path != "env[NVIDIA_DRIVER_CAPABILITIES]" {
			t.Errorf("%s: changes %+v, want env[NVIDIA_DRIVER_CAPABILITIES] only", c.Name, c.Changes)
		}
	}

	// The key beside the recording is used without --key-file.
	_, out, raw2 = run("--plugin", changed)
	if out.Summary.Differ != 2 {
		t.Errorf("with the key beside the recording: %s", raw2)
	}
	// Without the key, values the plugin sets are not compared.
	nokey := filepath.Join(dir, "nokey.nrirec")
	if err := os.WriteFile(nokey, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r := nri(t, "replay", nokey, "--plugin", changed, "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Summary.Differ != 0 || len(out.Warnings) == 0 {
		t.Errorf("without the key: %v %s", err, r.stdout)
	}

	// Against the plugin as it was: the base set.
	code, out, raw2 = run("--plugin", changed, "--base-plugin", same)
	if code != 1 || out.Against != "base" || out.Summary.Differ != 2 {
		t.Errorf("against the base set: status %d, %s", code, raw2)
	}

	// A policy refusing NVIDIA_DRIVER_CAPABILITIES: gpu-env's answer is
	// refused, the containers get none of its variables.
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte("version: 1\ngrants:\n  - plugins: [gpu-env]\n    adjust:\n      env: [NVIDIA_VISIBLE_DEVICES]\n"), 0o644)
	code, out, raw2 = run("--plugin", same, "--policy", pol, "--key-file", key)
	if code != 1 || out.Summary.Differ != 2 {
		t.Fatalf("policy: status %d, %s", code, raw2)
	}
	for _, c := range out.Containers {
		paths := map[string]bool{}
		for _, ch := range c.Changes {
			paths[ch.Path] = true
		}
		if !paths["env[NVIDIA_DRIVER_CAPABILITIES]"] || !paths["env[NVIDIA_VISIBLE_DEVICES]"] || len(paths) != 2 {
			t.Errorf("%s: changes %+v", c.Name, c.Changes)
		}
	}

	// The text summary.
	r = nri(t, "replay", rec, "--plugin", changed, "--key-file", key)
	if r.code != 1 || !strings.Contains(r.stdout, "2 of 2 container(s) would differ") || !strings.Contains(r.stdout, "env[NVIDIA_DRIVER_CAPABILITIES] (2)") {
		t.Errorf("text: %d\n%s", r.code, r.stdout)
	}
}

// TestRecordReplayRuntime records a scenario as a recording runtime does
// (nri run --record: with every plugin's own answer), then replays it
// against gpu-env with another configuration: the replay compares
// gpu-env's answer with its recorded one, container by container, and
// counts the differences by plugin.
func TestRecordReplayRuntime(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "runtime.nrirec")
	sc := filepath.Join(dir, "record.yaml")
	// The recorder plugin is not needed: the runtime records.
	text := strings.Replace(fmt.Sprintf(recordScenario, rec), "  - name: recorder\n    index: \"99\"\n    args: [-out="+rec+", -keep-annotation=gpu-env.nrikit.dev/*]\n", "", 1)
	if err := os.WriteFile(sc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "record-config.yaml")
	if err := os.WriteFile(conf, []byte("keepAnnotations: [gpu-env.nrikit.dev/*]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := nri(t, "run", sc, "--record", rec, "--record-config", conf); r.code != 0 {
		t.Fatalf("nri run --record: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	same := gpuEnvPlugin(t, filepath.Join(dir, "same"), "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\n")
	changed := gpuEnvPlugin(t, filepath.Join(dir, "changed"), "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\nenv: {NVIDIA_VISIBLE_DEVICES: void, NVIDIA_DRIVER_CAPABILITIES: all}\n")
	type answer struct {
		Plugin  string `json:"plugin"`
		Differs bool   `json:"differs"`
		Changes []struct {
			Path string `json:"path"`
		} `json:"changes"`
	}
	type out struct {
		Source  string `json:"source"`
		Summary struct {
			Differ   int
			ByPlugin []struct {
				Name       string `json:"name"`
				Containers int    `json:"containers"`
			} `json:"byPlugin"`
		} `json:"summary"`
		Containers []struct {
			Name    string   `json:"name"`
			Answers []answer `json:"answers"`
		} `json:"containers"`
	}
	run := func(plugin string) (int, out, string) {
		t.Helper()
		r := nri(t, "replay", rec, "--plugin", plugin, "--key-file", rec+".key", "--output", "json")
		var o out
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("nri replay: %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
		}
		return r.code, o, r.stdout
	}
	code, o, raw := run(same)
	if code != 0 || o.Source != "runtime" || len(o.Containers) != 2 {
		t.Fatalf("the same plugin: status %d\n%s", code, raw)
	}
	for _, c := range o.Containers {
		if len(c.Answers) != 1 || c.Answers[0].Plugin != "50-gpu-env" || c.Answers[0].Differs {
			t.Errorf("%s: answers %+v, want gpu-env's, the same", c.Name, c.Answers)
		}
	}
	code, o, raw = run(changed)
	if code != 1 || o.Summary.Differ != 2 || len(o.Summary.ByPlugin) != 1 || o.Summary.ByPlugin[0].Name != "50-gpu-env" ||
		o.Summary.ByPlugin[0].Containers != 2 {
		t.Fatalf("another configuration: status %d\n%s", code, raw)
	}
	for _, c := range o.Containers {
		if len(c.Answers) != 1 || !c.Answers[0].Differs || len(c.Answers[0].Changes) != 1 ||
			c.Answers[0].Changes[0].Path != "env[NVIDIA_DRIVER_CAPABILITIES]" {
			t.Errorf("%s: answers %+v, want gpu-env's differing in NVIDIA_DRIVER_CAPABILITIES", c.Name, c.Answers)
		}
	}
	r := nri(t, "replay", rec, "--plugin", changed, "--key-file", rec+".key")
	if !strings.Contains(r.stdout, "50-gpu-env's answer:") {
		t.Errorf("text: %s", r.stdout)
	}
}
