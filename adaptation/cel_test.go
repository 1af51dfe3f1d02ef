package adaptation

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/celscope"
)

// CEL is an option of the Adaptation (WithCEL): without it a CEL
// expression in a scope is refused with a reason naming the option, and
// package adaptation does not link a CEL implementation. With it, CEL
// scopes work (TestScopeDecidedAtCreation, TestScopeRegistrationErrors).

// TestCELScopeNeedsWithCEL: a plugin declaring a CEL scope to a runtime
// without WithCEL is refused at registration, with the reason.
func TestCELScopeNeedsWithCEL(t *testing.T) {
	scope := &api.PluginScope{Cel: `"GPU" in container.env`}
	rt := newTestRuntime(t, []testPlugin{{"10-cel", helperArgs("stub", "-scope", scopeArg(t, scope))}})
	rt.start(t)
	rec := rt.logs.wait(t, "refusal", func(r logRecord) bool {
		return r.msg == "plugin registration failed" && strings.Contains(r.attrs["error"], `"10-cel"`)
	})
	if msg := rec.attrs["error"]; !strings.Contains(msg, "declared an invalid scope") || !strings.Contains(msg, "adaptation.WithCEL") {
		t.Errorf("refusal %q does not name the missing adaptation.WithCEL", msg)
	}
	got := rt.logs.wait(t, "plugin's answer", output("10-cel", "REGISTER"))
	if !strings.Contains(got.msg, "InvalidArgument") || !strings.Contains(got.msg, "adaptation.WithCEL") {
		t.Errorf("plugin got %q, want InvalidArgument naming adaptation.WithCEL", got.msg)
	}
	if _, ok := rt.plugin("10-cel"); ok {
		t.Error("plugin with a CEL scope registered without WithCEL")
	}
}

// TestCELOverrideScope: a PluginPolicy scope with a CEL expression makes
// New fail without WithCEL, and compiles with it, whichever option comes
// first.
func TestCELOverrideScope(t *testing.T) {
	override := WithPluginOverride("10-gpu", PluginPolicy{Scope: &api.PluginScope{Cel: `pod.namespace == "gpu"`}})
	_, err := New("rt", "v1", (&policed{}).list, noUpdate, override)
	if err == nil || !strings.Contains(err.Error(), "adaptation.WithCEL") {
		t.Errorf("New with a CEL override scope and no WithCEL: %v, want an error naming adaptation.WithCEL", err)
	}
	for _, opts := range [][]Option{{override, WithCEL(celscope.Compile)}, {WithCEL(celscope.Compile), override}} {
		a, err := New("rt", "v1", (&policed{}).list, noUpdate, opts...)
		must(t, err)
		if a.cfg.adminScopes["10-gpu"] == nil {
			t.Error("CEL override scope not compiled with WithCEL")
		}
	}
	if _, err := New("rt", "v1", (&policed{}).list, noUpdate, WithCEL(nil)); err == nil {
		t.Error("WithCEL(nil) accepted")
	}
}

// TestCELPolicyWhereNeedsWithCEL: a policy file whose where has a CEL
// expression is, without WithCEL, an invalid policy file (fail closed,
// the reason naming the option); with WithCEL it is the policy.
func TestCELPolicyWhereNeedsWithCEL(t *testing.T) {
	const doc = "grants:\n- plugins: [env]\n  where: {cel: 'pod.namespace == \"gpu\"'}\n  adjust: {env: [\"*\"]}\n"
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, path, doc)
	env := func() Option {
		return WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}, fp: &api.FailurePolicy{FailRequest: true}})
	}
	rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(scaled(time.Hour)), env())
	rec := rt.logs.wait(t, "invalid policy logged", func(r logRecord) bool {
		return r.msg == "invalid policy file: no plugin may change anything until it is fixed"
	})
	if msg := rec.attrs["error"]; !strings.Contains(msg, "adaptation.WithCEL") {
		t.Errorf("invalid policy file error %q does not name adaptation.WithCEL", msg)
	}
	rt.start(t)
	pod := testPod(0)
	pod.Namespace = "gpu"
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: testCtr(0, 0)}); err == nil {
		t.Fatal("CreateContainer under a policy file needing CEL: the plugin's change was not refused")
	}

	withCEL := newTestRuntime(t, nil, WithPolicyFile(path), WithCEL(celscope.Compile), env())
	if withCEL.a.Policy() == nil {
		t.Fatal("policy file with a CEL where not loaded with WithCEL")
	}
	withCEL.start(t)
	rsp, err := withCEL.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: testCtr(0, 0)})
	must(t, err)
	if got := rsp.GetAdjust().GetEnv(); len(got) != 1 || got[0].GetKey() != "A" {
		t.Errorf("plugin's env %v inside the CEL where, want A", got)
	}
}

// TestOptInDependencies fails if package adaptation links a CEL
// implementation or the Prometheus client again: a runtime that does not
// ask for CEL (WithCEL) or Prometheus metrics (package runtimemetrics)
// must not pay for them (docs/embedding.md, docs/metrics.md).
func TestOptInDependencies(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/nrikit/nrikit/api") {
		t.Fatalf("go list -deps printed %d packages, none of them api: not the list it should be", len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "cel.dev/") || strings.HasPrefix(dep, "github.com/google/cel-go") ||
			strings.HasPrefix(dep, "github.com/prometheus/") ||
			dep == "github.com/nrikit/nrikit/filter/celscope" || dep == "github.com/nrikit/nrikit/adaptation/runtimemetrics" {
			t.Errorf("package adaptation depends on %s", dep)
		}
	}
}
