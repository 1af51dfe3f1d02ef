package simulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// wasmScenario is a pod in the guest's scope and a container the guest
// must set WASM_ENV_POD in; %PLUGINS% is replaced by the plugins.
const wasmScenario = `name: wasm
pods:
  - name: p
    namespace: ns
    labels: {wasm-env: "on"}
containers:
  - name: c
    pod: p
%PLUGINS%
steps:
  - runPod: p
  - createContainer: c
    expect:
      env: [WASM_ENV_POD=ns/p]
  - stopContainer: c
  - removeContainer: c
  - stopPod: p
  - removePod: p
`

// loadScenario writes text (with %PLUGINS% replaced) into dir and loads
// it, so that relative plugin paths resolve against dir.
func loadScenario(t *testing.T, dir, text, plugins string) *scenario.Scenario {
	t.Helper()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(text, "%PLUGINS%", plugins, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// writeFakeModule writes a file that starts like a WASM module.
func writeFakeModule(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("\x00asm\x01\x00\x00\x00not really"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startError returns the error of starting a simulator for sc.
func startError(t *testing.T, sc *scenario.Scenario, opts ...Option) error {
	t.Helper()
	sim, err := New(sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = sim.Start(ctx)
	if serr := sim.Stop(ctx); serr != nil {
		t.Errorf("Stop: %v", serr)
	}
	if err == nil {
		t.Fatal("Start succeeded")
	}
	return err
}

// TestWASMPluginRefused checks the plugins refused before the runtime
// starts, with what the error must say.
func TestWASMPluginRefused(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "50-text")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFakeModule(t, filepath.Join(dir, "x.wasm"))
	for _, tc := range []struct {
		name, plugins string
		opts          []Option
		line          int // of the scenario error, 0 for another error
		want          string
	}{
		{"extra plugin neither executable nor WASM", "", []Option{WithExtraPlugin(notExec)}, 0,
			notExec + " is neither an executable file nor a WASM module"},
		{"extra plugin directory with such a file", "", []Option{WithExtraPluginDir(dir)}, 0,
			"is neither an executable file nor a WASM module"},
		{"WASM path with files", "plugins:\n  - name: w\n    index: \"10\"\n    path: x.wasm\n    files: {a: b}\n", nil, 10,
			`plugin "10-w": ` + filepath.Join(dir, "x.wasm") + " is a WASM module, which takes no args or files"},
		{"WASM path with args", "plugins:\n  - name: w\n    index: \"10\"\n    path: x.wasm\n    args: [-v]\n", nil, 10,
			"is a WASM module, which takes no args or files"},
		{"path neither executable nor WASM", "plugins:\n  - name: w\n    index: \"10\"\n    path: 50-text\n", nil, 10,
			"is neither an executable file nor a WASM module"},
		{"missing package", "plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: ./nosuch\n", nil, 10,
			`plugin "10-w": wasmPackage: stat ` + filepath.Join(dir, "nosuch")},
		{"package without Go files", "plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: .\n", nil, 10,
			"holds no Go source files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := loadScenario(t, dir, wasmScenario, tc.plugins)
			err := startError(t, sc, tc.opts...)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
			var serr *scenario.Error
			if isScenario := errors.As(err, &serr); isScenario != (tc.line > 0) || (isScenario && serr.Line != tc.line) {
				t.Errorf("error %v: scenario error %v, want line %d", err, isScenario, tc.line)
			}
		})
	}
}

// TestWASMPathInstalledAsModule checks that a scenario plugin whose path
// is a WASM module is put into the plugin directory as the module (a
// copy, mode 0644 even if the original is group-writable, which the
// runtime would refuse), not as a launcher script.
func TestWASMPathInstalledAsModule(t *testing.T) {
	dir := t.TempDir()
	writeFakeModule(t, filepath.Join(dir, "x.wasm"))
	if err := os.Chmod(filepath.Join(dir, "x.wasm"), 0o664); err != nil {
		t.Fatal(err)
	}
	sc := loadScenario(t, dir, wasmScenario, "plugins:\n  - name: w\n    index: \"10\"\n    path: x.wasm\n")
	sim, err := New(sc)
	if err != nil {
		t.Fatal(err)
	}
	work, err := sim.makeWorkDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	pluginDir, dataDir := filepath.Join(work, "plugins"), filepath.Join(work, "data")
	for _, d := range []string{pluginDir, dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inst, err := sim.installPlugins(context.Background(), pluginDir, work, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(inst) != 1 || !inst[0].wasm {
		t.Fatalf("installed %+v", inst)
	}
	fi, err := os.Lstat(filepath.Join(pluginDir, "10-w"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("plugin directory entry: %v (%v), want a regular file of mode 0644", fi, err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "x.wasm"))
	if got, err := os.ReadFile(filepath.Join(pluginDir, "10-w")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("plugin directory entry is not a copy of the module (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "10-w")); err == nil {
		t.Error("a working directory was made for the WASM plugin")
	}
}

// TestWASMPackageWithoutGo checks the error when there is no Go
// toolchain to build a wasmPackage with.
func TestWASMPackageWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	pkg, err := filepath.Abs(filepath.Join("..", "..", "examples", "wasm-env"))
	if err != nil {
		t.Fatal(err)
	}
	sc := loadScenario(t, t.TempDir(), wasmScenario, fmt.Sprintf("plugins:\n  - name: w\n    index: \"10\"\n    wasmPackage: %s\n", pkg))
	err = startError(t, sc)
	for _, want := range []string{`s.yaml:10: plugin "10-w": building its WASM module needs the Go toolchain`, "no go command on PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestExpect checks a step's expect against the container's spec: met by
// the helper plugins' variables, failed for others, with what is
// missing.
func TestExpect(t *testing.T) {
	defer goleak.VerifyNone(t)
	steps := "steps:\n  - runPod: p\n  - createContainer: a\n    expect:\n      env: [HELPER_one=1%EXTRA%]\n%ANNOTATIONS%" +
		"  - stopContainer: a\n  - removeContainer: a\n  - stopPod: p\n  - removePod: p\n"
	base := helperScenario[:strings.Index(helperScenario, "steps:")]
	ok := base + strings.NewReplacer("%EXTRA%", ", HELPER_two=1", "%ANNOTATIONS%", "").Replace(steps)
	if r := play(t, ok, "env"); !r.OK {
		t.Errorf("expectations met, but failures %v", r.Failures)
	}
	bad := base + strings.NewReplacer("%EXTRA%", ", NOPE=1, HELPER_two=2",
		"%ANNOTATIONS%", "      annotations: {example.com/x: y}\n").Replace(steps)
	r := play(t, bad, "env")
	want := "step 2 (createContainer a): the container's spec lacks the expected env NOPE=1, HELPER_two=2; annotations example.com/x=y"
	if r.OK || len(r.Failures) != 1 || r.Failures[0] != want {
		t.Errorf("failures %q, want [%q]", r.Failures, want)
	}
	if e := event(r, "CreateContainer", "a"); e == nil || e.OK {
		t.Errorf("CreateContainer a is not marked as failed: %+v", e)
	}
}
