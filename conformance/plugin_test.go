package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// testTimeout is a hang guard for a whole checker run.
const testTimeout = 2 * time.Minute

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func renderText(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	return b.String()
}

// requireAllPassed fails the test if any check failed.
func requireAllPassed(t *testing.T, r *Report) {
	t.Helper()
	if r.Failed() {
		t.Fatalf("checks failed:\n%s", renderText(t, r))
	}
}

// requireCheck returns the named result, failing the test if it did not
// run.
func requireCheck(t *testing.T, r *Report, name string) Result {
	t.Helper()
	res, ok := r.Result(name)
	if !ok {
		t.Fatalf("check %q did not run:\n%s", name, renderText(t, r))
	}
	return res
}

func TestCheckPluginGoodStubPlugin(t *testing.T) {
	var out bytes.Buffer
	r, err := CheckPlugin(testContext(t), PluginConfig{
		Command: helperCommand("stub-good"),
		Env:     helperEnvVars(),
		Output:  &out,
	})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	requireAllPassed(t, r)
	for _, ev := range []api.Event{api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER} {
		requireCheck(t, r, EventCheckName(ev))
	}
	if _, ok := r.Result(EventCheckName(api.Event_RUN_POD_SANDBOX)); ok {
		t.Errorf("RunPodSandbox was checked as subscribed, though the plugin does not implement it")
	}
	sub := requireCheck(t, r, CheckSubscription)
	if !strings.Contains(sub.Reason, "CreateContainer") || strings.Contains(sub.Reason, "RunPodSandbox") {
		t.Errorf("subscription reason %q does not describe the stub's subscription", sub.Reason)
	}
	probe := requireCheck(t, r, CheckProbe)
	if !strings.Contains(probe.Reason, "RunPodSandbox: ") {
		t.Errorf("probe reason %q does not report RunPodSandbox", probe.Reason)
	}
	if res := requireCheck(t, r, CheckCloses); !strings.Contains(res.Reason, "exited with status 0") {
		t.Errorf("close check reason %q does not describe the exit", res.Reason)
	}
}

func TestCheckPluginBadPlugins(t *testing.T) {
	tests := []struct {
		mode   string
		check  string
		reason string
		// passes are checks that must still pass: the failure is
		// attributed precisely.
		passes []string
	}{
		{mode: "never-registers", check: CheckRegisters, reason: "no RegisterPlugin within"},
		{mode: "wrong-name", check: CheckIdentity, reason: `knows the plugin as "10-check-target"`, passes: []string{CheckRegisters}},
		{mode: "unknown-bits", check: CheckSubscription, reason: "unknown event bits 0x100000", passes: []string{CheckConfigure}},
		{mode: "malformed", check: CheckWellFormed, reason: "env without a key", passes: []string{CheckConsistent, EventCheckName(api.Event_CREATE_CONTAINER)}},
		{mode: "conflicting", check: CheckConsistent, reason: `env "MODE" set twice`, passes: []string{CheckWellFormed}},
		{mode: "crash-unsubscribed", check: CheckStaysUp, reason: "exited with status 3", passes: []string{EventCheckName(api.Event_CREATE_CONTAINER)}},
		{mode: "ignore-close", check: CheckCloses, reason: "still running", passes: []string{CheckShutdown, CheckStaysUp}},
		{mode: "invalid-scope", check: CheckScope, reason: `declared an invalid scope: pod_label_selector: label selector "team in (a": column`, passes: []string{CheckConfigure, CheckSubscription}},
		{mode: "scope-ignored", check: CheckScopeKept, reason: "adjusts the container (adjusts env[RAW];",
			passes: []string{CheckScope, EventCheckName(api.Event_CREATE_CONTAINER), CheckCloses}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			// Short bounds only where the bound is what is checked: a
			// busy machine may need the defaults elsewhere.
			cfg := PluginConfig{Command: helperCommand(tc.mode), Env: helperEnvVars()}
			switch tc.mode {
			case "never-registers":
				cfg.RegistrationTimeout = time.Second
			case "ignore-close":
				cfg.ExitTimeout = time.Second
			}
			r, err := CheckPlugin(testContext(t), cfg)
			if err != nil {
				t.Fatalf("CheckPlugin: %v", err)
			}
			if !r.Failed() {
				t.Fatalf("report did not fail:\n%s", renderText(t, r))
			}
			res := requireCheck(t, r, tc.check)
			if res.Passed {
				t.Fatalf("check %q passed:\n%s", tc.check, renderText(t, r))
			}
			if !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("check %q failed with reason %q, want it to mention %q", tc.check, res.Reason, tc.reason)
			}
			for _, name := range tc.passes {
				if res := requireCheck(t, r, name); !res.Passed {
					t.Errorf("check %q failed too: %s", name, res.Reason)
				}
			}
		})
	}
}

// TestCheckPluginScope: a plugin built with the stub and a scope is sent
// the lifecycle of a pod in its scope (the checker brings its pod into
// it), shows its scope in the Configure line, and, started again under a
// runtime that does not evaluate scopes, leaves a pod outside it
// unchanged.
func TestCheckPluginScope(t *testing.T) {
	r, err := CheckPlugin(testContext(t), PluginConfig{Command: helperCommand("stub-scoped"), Env: helperEnvVars()})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	if r.Failed() {
		t.Fatalf("report failed:\n%s", renderText(t, r))
	}
	for name, want := range map[string]string{
		CheckConfigure: `scope: pod_label_selector="team=a"`,
		CheckScope:     "the checker's pods are in it",
		CheckScopeKept: "outside its scope, left it unchanged",
		EventCheckName(api.Event_CREATE_CONTAINER): "adjusts annotations[checked-by], env[GOOD], env[REMOVED] (removed), mounts[/scratch]",
	} {
		if res := requireCheck(t, r, name); !res.Passed || !strings.Contains(res.Reason, want) {
			t.Errorf("check %q: passed %v, reason %q; want it to pass mentioning %q", name, res.Passed, res.Reason, want)
		}
	}
}

func TestCheckPluginMalformedFindings(t *testing.T) {
	r, err := CheckPlugin(testContext(t), PluginConfig{Command: helperCommand("malformed"), Env: helperEnvVars()})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	res := requireCheck(t, r, CheckWellFormed)
	for _, want := range []string{"env without a key", "mount without a key", `unknown container "no-such-container"`} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("reason %q does not mention %q", res.Reason, want)
		}
	}
}

// shortSocketPath returns a unix socket path short enough for sun_path.
func shortSocketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nric")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "p.sock")
}

// startExternal starts an external plugin process and reaps it when the
// test ends.
func startExternal(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the external plugin: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("external plugin output:\n%s", out.String())
		}
	})
}

func TestCheckPluginExternalStubPlugin(t *testing.T) {
	path := shortSocketPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	args := helperCommand("stub-external")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperSocketEnv+"="+path)
	startExternal(t, cmd)

	r, err := CheckPlugin(testContext(t), PluginConfig{Listener: l, Name: "30-external-good"})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	requireAllPassed(t, r)
	if res := requireCheck(t, r, CheckCloses); !strings.Contains(res.Reason, "closed its end") && !strings.Contains(res.Reason, "closed the connection itself") {
		t.Errorf("close check reason %q does not say that the plugin closed the connection", res.Reason)
	}
}

func TestCheckPluginListenPath(t *testing.T) {
	path := shortSocketPath(t)
	ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
	defer cancel()
	_, err := CheckPlugin(ctx, PluginConfig{Listen: path})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("CheckPlugin without a plugin connecting: err = %v, want an error naming %s", err, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind: %v", path, err)
	}
}

func TestPluginConfigErrors(t *testing.T) {
	ctx := testContext(t)
	for name, cfg := range map[string]PluginConfig{
		"no mode":         {},
		"two modes":       {Command: []string{"x"}, Listen: "/tmp/x"},
		"bad name":        {Command: []string{"x"}, Name: "nodash"},
		"unknown events":  {Command: []string{"x"}, SupportedEvents: 1 << 20},
		"missing command": {Command: []string{"/nonexistent/plugin"}},
	} {
		if _, err := CheckPlugin(ctx, cfg); err == nil {
			t.Errorf("%s: CheckPlugin succeeded", name)
		}
	}
}

func TestReportRendering(t *testing.T) {
	r := &Report{}
	var rec recorder
	rec.pass("one", time.Millisecond, "fine")
	rec.fail("two", 0, "broken: %d", 42)
	rec.info("three", 0, "what the peer did")
	r.Results = rec.report.Results
	if !r.Failed() {
		t.Fatal("Failed() = false with a failed check")
	}
	if passed, failed := r.Counts(); passed != 1 || failed != 1 || r.InformationalCount() != 1 {
		t.Errorf("Counts() = %d, %d and InformationalCount() = %d; want 1, 1, 1", passed, failed, r.InformationalCount())
	}
	text := renderText(t, r)
	for _, want := range []string{"PASS  one", "FAIL  two", "broken: 42", "INFO  three", "result: FAIL (1 of 2 checks failed, 1 informational)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Failed  bool     `json:"failed"`
		Results []Result `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &decoded); err != nil {
		t.Fatalf("decoding %s: %v", b.String(), err)
	}
	if !decoded.Failed || len(decoded.Results) != 3 || decoded.Results[1].Reason != "broken: 42" ||
		decoded.Results[1].Informational || !decoded.Results[2].Informational || !decoded.Results[2].Passed {
		t.Errorf("JSON report = %+v", decoded)
	}
	if (&Report{}).Failed() {
		t.Error("an empty report failed")
	}
	informational := &Report{Results: []Result{{Name: "only", Passed: true, Informational: true}}}
	if informational.Failed() || !strings.Contains(renderText(t, informational), "result: PASS (0 checks, 1 informational)") {
		t.Errorf("a report of one informational result:\n%s", renderText(t, informational))
	}
}
