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
		"required: 10-logger\n" +
		`policy.yaml:3: grants[0] plugins=gpu-env where=namespaces=["gpu-*"] AND cel="pod.name != 'x'" allows=env` + "\n" +
		"policy.yaml: no default grant where=all allows=none\n"
	if out != want {
		t.Errorf("summary:\n%s\nwant\n%s", out, want)
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
