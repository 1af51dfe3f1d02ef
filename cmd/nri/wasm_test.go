package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/internal/testing/wasmtest"
)

// wasmExample is the example scenario with a WASM plugin.
var wasmExample = filepath.Join("examples", "wasm.yaml")

// The WASM module of the example's plugin, built once per test binary
// next to nriBinary; the runs share one compilation cache there.
var (
	wasmOnce   sync.Once
	wasmModule string
	wasmErr    error
)

// needGo skips the test if there is no go command to build WASM
// plugins with.
func needGo(t *testing.T) {
	t.Helper()
	wasmtest.GoTool(t)
}

// wasmCacheDir is the compilation cache directory the tests share.
func wasmCacheDir() string { return filepath.Join(filepath.Dir(nriBinary), "wasm-cache") }

// exampleModule returns the example's WASM plugin module (mode 0644, as
// go build writes it), building it on first use as nri run does (with
// -trimpath: the same bytes, so the compilation cache serves both).
func exampleModule(t *testing.T) string {
	t.Helper()
	needGo(t)
	wasmOnce.Do(func() {
		out := filepath.Join(filepath.Dir(nriBinary), "wasm-env.wasm")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		wasmErr = wasmtest.Build(ctx, wasmtest.GoTool(t), filepath.Join("examples", "wasm-env"), out)
		wasmModule = out
	})
	if wasmErr != nil {
		t.Fatalf("building the WASM plugin: %v", wasmErr)
	}
	return wasmModule
}

// pluginCopy copies the file at src into a new directory as name, with
// mode.
func pluginCopy(t *testing.T, src, name string, mode os.FileMode) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// pluginSummary is what the tests check of a plugin in the report.
type pluginSummary struct {
	kind            string
	calls, filtered int
}

// findPlugin returns the report's plugin id.
func findPlugin(rep *jsonReport, id string) (pluginSummary, bool) {
	for _, p := range rep.Plugins {
		if p.ID == id {
			return pluginSummary{kind: p.Kind, calls: p.Calls, filtered: p.Filtered}, true
		}
	}
	return pluginSummary{}, false
}

// TestRunWASMExample plays cmd/nri/examples/wasm.yaml: the simulator
// builds the WASM plugin from its Go package, the runtime loads it, and
// it sets its variables only in the pod of its scope.
func TestRunWASMExample(t *testing.T) {
	needGo(t)
	for run := 1; run <= 2; run++ {
		start := time.Now()
		r := nri(t, "run", wasmExample, "--output", "json", "--wasm-cache-dir", wasmCacheDir(), "--timeout", scaled(2*time.Minute).String())
		t.Logf("run %d took %v", run, time.Since(start).Round(time.Millisecond))
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		rep := decode(t, r.stdout)
		if p, ok := findPlugin(rep, "50-wasm-env"); !ok || p.kind != "wasm" || p.calls != 1 || p.filtered != 1 {
			t.Fatalf("plugins %+v: want 50-wasm-env, kind wasm, called once, filtered once", rep.Plugins)
		}
		env := map[string][]string{}
		for _, c := range rep.Containers {
			env[c.Name] = c.Env
		}
		for _, kv := range []string{"GREETING=hello from WebAssembly", "LOG_FORMAT=json", "WASM_ENV_POD=demo/shop", "PORT=8080"} {
			if !slices.Contains(env["api"], kv) {
				t.Errorf("container api lacks %s: %v", kv, env["api"])
			}
		}
		if hasEnv(env["worker"], "GREETING") || hasEnv(env["worker"], "WASM_ENV_POD") {
			t.Errorf("the WASM plugin changed the container out of its scope: %v", env["worker"])
		}
	}
	if entries, err := os.ReadDir(wasmCacheDir()); err != nil || len(entries) == 0 {
		t.Errorf("compilation cache %s: %d entries, %v", wasmCacheDir(), len(entries), err)
	}
}

// TestWASMExampleNeedsThePlugin plays the example without its WASM
// plugin: its expectations fail the run.
func TestWASMExampleNeedsThePlugin(t *testing.T) {
	path := exampleWithout(t, wasmExample, "  - name: wasm-env\n", "steps:\n")
	r := nri(t, "run", path, "--output", "json")
	if r.code != exitSteps {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, exitSteps, r.stderr)
	}
	rep := decode(t, r.stdout)
	want := "step 3 (createContainer api): the container's spec lacks the expected env GREETING=hello from WebAssembly, LOG_FORMAT=json, WASM_ENV_POD=demo/shop"
	if rep.OK || !slices.Contains(rep.Failures, want) {
		t.Errorf("failures %q, want %q", rep.Failures, want)
	}
}

// exampleWithout writes the example scenario at path without its text
// from the line start up to the line end (such as its plugin) into a
// temporary file, and returns the file's path.
func exampleWithout(t *testing.T, path, start, end string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, start), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("no %q before %q in %s", start, end, path)
	}
	out := filepath.Join(t.TempDir(), "without.yaml")
	if err := os.WriteFile(out, []byte(text[:i]+text[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// wasmFlagScenario is a scenario for the example's WASM plugin given
// with --plugin.
const wasmFlagScenario = `name: wasm-flag
pods:
  - {name: p, namespace: ns, labels: {wasm-env: "on"}}
containers:
  - {name: c, pod: p}
steps:
  - runPod: p
  - createContainer: c
    expect:
      env: [WASM_ENV_POD=ns/p]
`

// TestRunWASMPluginFlag gives run and serve a WASM module that is not
// executable with --plugin and --plugin-dir.
func TestRunWASMPluginFlag(t *testing.T) {
	module := pluginCopy(t, exampleModule(t), "55-wasm", 0o644)
	sc := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sc, []byte(wasmFlagScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", sc, "--plugin", module},
		{"run", sc, "--plugin-dir", filepath.Dir(module)},
		{"serve", "--socket", filepath.Join(t.TempDir(), "nri.sock"), "--wait-plugins", "0", "--scenario", sc, "--plugin", module},
	} {
		r := nri(t, append(args, "--output", "json", "--wasm-cache-dir", wasmCacheDir())...)
		if r.code != 0 {
			t.Errorf("nri %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
			continue
		}
		rep := decode(t, r.stdout)
		if p, ok := findPlugin(rep, "55-wasm"); !ok || p.kind != "wasm" || p.calls == 0 {
			t.Errorf("nri %v: plugins %+v", args, rep.Plugins)
		}
	}
	// The memory limit is the runtime's: a Go guest needs more than 1 MiB.
	r := nri(t, "run", sc, "--plugin", module, "--wasm-memory-limit", "1Mi", "--wasm-cache-dir", wasmCacheDir())
	if r.code != exitPlugins || !strings.Contains(r.stdout, "55-wasm did not register") || !strings.Contains(r.stdout, "over limit") {
		t.Errorf("--wasm-memory-limit 1Mi: exit %d\nstdout:\n%s", r.code, r.stdout)
	}
}

// TestWASMPluginMistakes: a plugin file that is neither executable nor
// WASM, a WASM plugin with files, bad memory limits.
func TestWASMPluginMistakes(t *testing.T) {
	text := pluginCopy(t, "main.go", "50-text", 0o644)
	r := nri(t, "run", "--plugin", text)
	if want := text + " is neither an executable file nor a WASM module"; r.code != exitFailure || !strings.Contains(r.stderr, want) {
		t.Errorf("non-executable --plugin: exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitFailure, want)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte("pods: [{name: p}]\nplugins:\n  - name: w\n    index: \"10\"\n    path: x.wasm\n    files: {a: b}\nsteps: [{runPod: p}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = nri(t, "run", sc)
	if want := sc + `:3: plugin "10-w": ` + filepath.Join(dir, "x.wasm") + " is a WASM module, which takes no args or files"; r.code != exitScenario || !strings.Contains(r.stderr, want) {
		t.Errorf("WASM plugin with files: exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitScenario, want)
	}

	for _, limit := range []string{"1Qi", "1Ki", "5Gi", "-1"} {
		if r := nri(t, "run", "--wasm-memory-limit", limit); r.code != exitUsage || !strings.Contains(r.stderr, "--wasm-memory-limit") {
			t.Errorf("--wasm-memory-limit %s: exit %d, stderr %q", limit, r.code, r.stderr)
		}
	}
}
