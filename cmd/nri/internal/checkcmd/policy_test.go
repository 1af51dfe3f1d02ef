package checkcmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runPolicy runs `check policy` on a file with content doc.
func runPolicy(t *testing.T, doc string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := New()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"policy", path})
	err := cmd.Execute()
	return strings.ReplaceAll(out.String(), path, "policy.yaml"), err
}

// TestCheckPolicy checks that a valid policy is summarized in matching
// order and that a typo is reported at its line with ErrInvalidPolicy.
func TestCheckPolicy(t *testing.T) {
	out, err := runPolicy(t, "required: [10-logger]\ngrants:\n  - plugins: [gpu-env]\n    where: {namespaces: [gpu-*], cel: \"pod.name != 'x'\"}\n    adjust: {env: [\"NVIDIA_*\"]}\n")
	if err != nil {
		t.Fatalf("valid policy: %v\n%s", err, out)
	}
	want := "policy.yaml: valid: 1 grant and the default\n" +
		"required: 10-logger identity=launched\n" +
		`policy.yaml:3: grants[0] plugins=gpu-env identity=launched where=namespaces=["gpu-*"] AND cel="pod.name != 'x'" allows=env` + "\n" +
		"policy.yaml: no default grant where=all allows=none\n"
	if out != want {
		t.Errorf("summary:\n%s\nwant\n%s", out, want)
	}

	// A grant for any process that reaches the socket is valid, with a
	// warning at its line.
	out, err = runPolicy(t, "grants:\n  - plugins: [logger]\n    identity: any\n  - plugins: [gpu-env]\n    identity: {namespaces: [kube-system]}\n")
	if err != nil {
		t.Fatalf("valid policy: %v\n%s", err, out)
	}
	want = "policy.yaml: valid: 2 grants and the default\n" +
		"policy.yaml:2: grants[0] plugins=logger identity=any where=all allows=none\n" +
		`policy.yaml:4: grants[1] plugins=gpu-env identity=namespaces=["kube-system"] where=all allows=none` + "\n" +
		"policy.yaml: no default grant where=all allows=none\n" +
		"policy.yaml:3: warning: grants[0].identity: any process that can reach the runtime's socket may register as logger and get this grant (and keep the plugin you mean out): bind it to the plugin's identity (docs/policy.md, Identity)\n"
	if out != want {
		t.Errorf("summary with a warning:\n%s\nwant\n%s", out, want)
	}

	out, err = runPolicy(t, "grants:\n  - plugins: [gpu-env]\n    adjust:\n      evn: [\"NVIDIA_*\"]\n      sysctl: [\"[\"]\n")
	if !errors.Is(err, ErrInvalidPolicy) || !strings.HasSuffix(err.Error(), "policy.yaml: 1 mistake") {
		t.Errorf("typo: error %v", err)
	}
	if want := "policy.yaml:4: unknown key \"evn\" in grants[0].adjust (did you mean \"env\"?)\n"; !strings.HasPrefix(out, want) {
		t.Errorf("typo: output\n%s\nwant\n%s", out, want)
	}
	if _, err := runPolicy(t, "default:\n  adjust:\n    sysctl: [\"[\", \"[\"]\n"); err == nil || !strings.HasSuffix(err.Error(), ": 2 mistakes") {
		t.Errorf("two mistakes: %v", err)
	}

	cmd := New()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"policy", filepath.Join(t.TempDir(), "missing.yaml")})
	if err := cmd.Execute(); err == nil || errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// TestCheckPolicyPluginDir checks that --plugin-dir lists the plugins a
// runtime finds there, with the names they register under and their
// grants, and points out a grant and a required entry that name a WASM
// plugin without the extension of its file name.
func TestCheckPolicyPluginDir(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"50-batchenv.wasm": {"\x00asm\x01\x00\x00\x00", 0o644},
		"10-logger":        {"#!/bin/sh\n", 0o755},
		"20-notes.txt":     {"not a plugin", 0o644}, // neither executable nor a module: skipped
		"README":           {"not IDX-NAME", 0o755},
	} {
		if err := os.WriteFile(filepath.Join(plugins, name), []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("required: [batchenv]\ngrants:\n  - plugins: [logger]\n  - plugins: [batchenv]\n    adjust: {env: [BATCH_*]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "policy", path, "--plugin-dir", plugins)
	if err != nil {
		t.Fatalf("err = %v\n%s", err, out)
	}
	_, listed, _ := strings.Cut(out, "plugins of "+plugins+":\n")
	want := "  10-logger (executable) registers as 10-logger: " + path + ":3: grants[0]\n" +
		"  50-batchenv.wasm (WASM module) registers as 50-batchenv.wasm: " + path + ": no default grant\n" +
		"    warning: " + path + ":4: grants[1] names batchenv, not batchenv.wasm: a plugin is named after its file, extension included\n" +
		"    warning: required names batchenv, not batchenv.wasm: a plugin is named after its file, extension included\n"
	if listed != want {
		t.Errorf("listed:\n%s\nwant:\n%s", listed, want)
	}
	if _, err := run(t, "policy", path, "--plugin-dir", filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "invalid --plugin-dir") {
		t.Errorf("a missing --plugin-dir: %v", err)
	}
}

// TestCheckPolicyDirectory checks that check policy notes a policy file
// in a directory others may write, which a runtime refuses (issue 37,
// route "policy directory"), and says nothing of one in a trusted
// directory.
func TestCheckPolicyDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() string {
		cmd := New()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"policy", path})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("check policy: %v\n%s", err, out.String())
		}
		return out.String()
	}
	if out := run(); strings.Contains(out, "note:") {
		t.Errorf("a policy in a trusted directory:\n%s", out)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if out, want := run(), "note: a runtime would refuse this file: "+dir+": writable by its group or others (mode drwxrwxrwx)\n"; !strings.HasSuffix(out, want) {
		t.Errorf("a policy in a directory others may write:\n%s\nwant it to end\n%s", out, want)
	}
}
