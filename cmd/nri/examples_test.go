package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// TestScenariosParse checks every scenario file of examples/, and that the
// embedded copies are the files at the paths they are reported under.
func TestScenariosParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("examples", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("scenario files: %v, %v", files, err)
	}
	for _, f := range files {
		if _, err := scenario.Load(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	for _, embedded := range []func() (string, []byte){defaultScenario, serveScenario} {
		name, data := embedded()
		onDisk, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Fatalf("the embedded scenario's name: %v", err)
		}
		if string(onDisk) != string(data) {
			t.Errorf("embedded %s differs from the file", name)
		}
	}
}

// TestDefaultScenarioShape checks what the default scenario promises to
// show: a GPU pod and a CPU pod in different namespaces, scoped plugins,
// a policy of plugin grants, an update and removals.
func TestDefaultScenarioShape(t *testing.T) {
	sc, err := scenario.Parse(defaultScenario())
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]bool{}
	gpu := 0
	for _, p := range sc.Pods {
		namespaces[p.Namespace] = true
		if p.Labels["accel"] == "gpu" {
			gpu++
		}
	}
	if len(sc.Pods) < 2 || len(namespaces) < 2 || gpu != 1 {
		t.Errorf("pods: %d in %d namespaces, %d GPU pods", len(sc.Pods), len(namespaces), gpu)
	}
	actions := map[scenario.Action]int{}
	rejections := 0
	for _, st := range sc.Steps {
		actions[st.Action]++
		if st.ExpectError != "" {
			rejections++
		}
	}
	for _, a := range []scenario.Action{scenario.UpdateContainer, scenario.RemoveContainer, scenario.RemovePod} {
		if actions[a] == 0 {
			t.Errorf("no %s step", a)
		}
	}
	if rejections != 0 || sc.CompiledPolicy == nil || len(sc.CompiledPolicy.Grants()) < 4 {
		t.Errorf("%d expected rejections, policy %v: want none and a policy of plugin grants", rejections, sc.CompiledPolicy)
	}
}

// TestWASMScenarioShape checks what wasm.yaml promises: a plugin built
// from the Go package wasm-env (WASM source present) and a creation whose
// expectations only that plugin meets.
func TestWASMScenarioShape(t *testing.T) {
	sc, err := scenario.Load(filepath.Join("examples", "wasm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wasm *scenario.Plugin
	for _, p := range sc.Plugins {
		if p.WASMPackage != "" {
			wasm = p
		}
	}
	if wasm == nil {
		t.Fatal("no plugin with wasmPackage")
	}
	if _, err := os.Stat(filepath.Join(sc.Dir, wasm.WASMPackage, "main.go")); err != nil {
		t.Errorf("the WASM plugin's source: %v", err)
	}
	expected := 0
	for _, st := range sc.Steps {
		if st.Expect != nil && slices.Contains(st.Expect.Env, "WASM_ENV_POD=demo/shop") {
			expected++
		}
	}
	if expected != 1 {
		t.Errorf("%d steps expect the WASM plugin's WASM_ENV_POD, want 1", expected)
	}
}
