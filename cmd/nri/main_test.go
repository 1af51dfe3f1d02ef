package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nriBinary is the nri binary built once for the package's tests.
var nriBinary string

// factor stretches the tests' waits to the machine's load when the test
// binary starts (internal/testing/testscale: 1 on a quiet machine).
var factor = testscale.Factor()

// scaled returns d stretched by factor.
func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nri-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nriBinary = filepath.Join(dir, "nri")
	build := exec.Command("go", "build", "-o", nriBinary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nri:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runResult is one run of the binary.
type runResult struct {
	code           int
	stdout, stderr string
}

// nri runs the binary with args, bounded by a hang guard.
func nri(t *testing.T, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, nriBinary, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running nri %v: %v", args, err)
	}
	return runResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// report is the part of the JSON report the tests check; every key
// documented in docs/cli.md.
type jsonReport struct {
	Scenario           string   `json:"scenario"`
	Runtime            string   `json:"runtime"`
	OK                 bool     `json:"ok"`
	Failures           []string `json:"failures"`
	RegistrationErrors []struct {
		Plugin string `json:"plugin"`
		Reason string `json:"reason"`
	} `json:"registrationErrors"`
	Plugins []struct {
		Name     string   `json:"name"`
		Index    string   `json:"index"`
		ID       string   `json:"id"`
		Kind     string   `json:"kind"`
		Events   []string `json:"events"`
		Calls    int      `json:"calls"`
		Filtered int      `json:"filtered"`
	} `json:"plugins"`
	Events []struct {
		Step      int      `json:"step"`
		Event     string   `json:"event"`
		Pod       string   `json:"pod"`
		Namespace string   `json:"namespace"`
		Container string   `json:"container"`
		Called    []string `json:"called"`
		Filtered  []string `json:"filtered"`
		Error     string   `json:"error"`
		Changes   []struct {
			Plugin string `json:"plugin"`
			Field  string `json:"field"`
			Value  string `json:"value"`
		} `json:"changes"`
	} `json:"events"`
	Containers []struct {
		Pod   string          `json:"pod"`
		Name  string          `json:"name"`
		State string          `json:"state"`
		Env   []string        `json:"env"`
		Spec  json.RawMessage `json:"spec"`
	} `json:"containers"`
}

// documentedKeys are the JSON keys docs/cli.md promises, by object, that
// every run's output has (TestJSONKeysDocumented checks the table against
// the report's type).
func documentedKeys() map[string][]string {
	return map[string][]string{
		"":           {"scenario", "runtime", "policy", "ok", "failures", "plugins", "registrationErrors", "lost", "events", "containers", "durationMs"},
		"plugins":    {"name", "index", "id", "kind", "pid", "events", "calls", "filtered", "errors", "refused", "state", "grant", "grantNotes"},
		"events":     {"step", "event", "pod", "namespace", "container", "called", "filtered", "calls", "changes", "error", "expectedError", "ok", "latencyMs"},
		"containers": {"pod", "namespace", "name", "id", "state", "updatedBy", "error", "env", "spec", "diff"},
	}
}

// checkKeys checks that the JSON document has every documented key.
func checkKeys(t *testing.T, doc []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("decoding the report: %v\n%s", err, doc)
	}
	for list, keys := range documentedKeys() {
		objects := []map[string]json.RawMessage{top}
		if list != "" {
			objects = nil
			if err := json.Unmarshal(top[list], &objects); err != nil {
				t.Fatalf("%s: %v", list, err)
			}
			if len(objects) == 0 {
				t.Errorf("%s is empty", list)
			}
		}
		for i, o := range objects {
			for _, k := range keys {
				if _, ok := o[k]; !ok {
					t.Errorf("%s[%d] lacks key %q", list, i, k)
				}
			}
		}
	}
}

func decode(t *testing.T, out string) *jsonReport {
	t.Helper()
	checkKeys(t, []byte(out))
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func hasEnv(env []string, key string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, key+"=") })
}

// TestRunDefault plays the default scenario with the sample plugins as
// processes and checks the text report.
func TestRunDefault(t *testing.T) {
	start := time.Now()
	r := nri(t, "run")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > scaled(10*time.Second) {
		t.Errorf("nri run took %v, the promise is under 10s (%v on this machine's load)", took, scaled(10*time.Second))
	}
	for _, want := range []string{
		"RunPodSandbox", "CreateContainer", "PostCreateContainer", "StartContainer", "UpdateContainer",
		"StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox", "ValidateContainerAdjustment",
		"filtered 30-hook-injector", "CONTAINERS", "+ process.env[NVIDIA_VISIBLE_DEVICES]: 0", "OK 18 steps",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The scenario's policy refuses the ulimit-adjuster's answer for train.
	if want := `plugin 40-ulimit-adjuster: changes to container train`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks the policy's refusal %q", want)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("colour in output that is not a terminal")
	}
	if t.Failed() {
		t.Logf("output:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestRunJSON checks the JSON report of the default scenario: every
// documented key, the plugins ran as processes, the GPU variables are set
// only in the GPU pod, the policy's where keeps the hook-injector from
// the debug container.
func TestRunJSON(t *testing.T) {
	r := nri(t, "run", "--output", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	rep := decode(t, r.stdout)
	if !rep.OK || rep.Scenario != "default" || len(rep.RegistrationErrors) != 0 {
		t.Errorf("ok %v, scenario %q, registration errors %v, failures %v", rep.OK, rep.Scenario, rep.RegistrationErrors, rep.Failures)
	}
	calls := map[string]int{}
	for _, p := range rep.Plugins {
		calls[p.ID] = p.Calls
		if p.Kind == "pre-installed" && p.Name != "" && p.ID != p.Index+"-"+p.Name {
			t.Errorf("plugin %+v", p)
		}
	}
	for _, id := range []string{"10-logger", "50-gpu-env", "20-device-injector", "30-hook-injector", "40-ulimit-adjuster", "05-differ"} {
		if calls[id] == 0 {
			t.Errorf("plugin %s was not called (calls %v)", id, calls)
		}
	}
	env := map[string][]string{}
	for _, c := range rep.Containers {
		env[c.Pod+"/"+c.Name] = c.Env
		if len(c.Spec) == 0 || string(c.Spec) == "null" {
			t.Errorf("container %s/%s has no spec", c.Pod, c.Name)
		}
	}
	if !hasEnv(env["trainer/train"], "NVIDIA_VISIBLE_DEVICES") {
		t.Errorf("GPU container env lacks NVIDIA_VISIBLE_DEVICES: %v", env["trainer/train"])
	}
	if hasEnv(env["web/nginx"], "NVIDIA_VISIBLE_DEVICES") || hasEnv(env["web/nginx"], "NVIDIA_DRIVER_CAPABILITIES") {
		t.Errorf("CPU container got GPU variables: %v", env["web/nginx"])
	}
	confined, scoped := false, false
	for _, e := range rep.Events {
		if e.Event == "CreateContainer" && e.Container == "debug" && slices.Contains(e.Filtered, "30-hook-injector") {
			confined = true // the hook-injector's grant confines it to train
		}
		if e.Event == "CreateContainer" && e.Container == "nginx" {
			// The scoped plugins leave the CPU pod alone: the runtime
			// filters the event out, or the plugin ignores it.
			scoped = true
			for _, c := range e.Changes {
				if c.Plugin != "05-differ" && c.Plugin != "10-logger" {
					t.Errorf("scoped plugin changed the CPU pod's container: %+v", c)
				}
			}
		}
		if e.Event == "CreateContainer" && e.Container == "train" {
			if !slices.ContainsFunc(e.Changes, func(c struct {
				Plugin string `json:"plugin"`
				Field  string `json:"field"`
				Value  string `json:"value"`
			}) bool {
				return c.Plugin == "50-gpu-env" && c.Field == "env[NVIDIA_VISIBLE_DEVICES]" && c.Value == "0"
			}) {
				t.Errorf("the train creation does not attribute NVIDIA_VISIBLE_DEVICES to gpu-env: %+v", e.Changes)
			}
		}
	}
	if !confined || !scoped {
		t.Errorf("hook-injector confined to train %v, nginx created %v", confined, scoped)
	}
}

func TestBadScenario(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "pods:\n  - name: cpu\ncontainers:\n  - name: c1\n    pod: gpu\nsteps:\n  - runPod: cpu\n"
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := nri(t, "run", path)
	want := path + `:5: container "c1": unknown pod "gpu"`
	if r.code != exitScenario || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitScenario, want)
	}
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("plugins:\n  - {name: nosuch, index: \"10\"}\npods: [{name: p}]\nsteps: [{runPod: p}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = nri(t, "run", unknown)
	if r.code != exitScenario || !strings.Contains(r.stderr, unknown+`:2: plugin "10-nosuch": no sample plugin "nosuch"`) {
		t.Errorf("unknown plugin: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"run", "a", "b"}, {"bogus"}, {"run", "--output", "xml"}, {"run", "--nope"},
		{"serve"}, {"plugin", "nosuch"}, {"--log-level", "loud", "run"}, {"plugin", "logger", "-nope"}} {
		r := nri(t, args...)
		if r.code != exitUsage || r.stderr == "" {
			t.Errorf("nri %v: exit %d, stderr %q; want %d", args, r.code, r.stderr, exitUsage)
		}
	}
	for _, cmd := range [][]string{{"--help"}, {"run", "--help"}, {"serve", "--help"}, {"plugin", "--help"}} {
		r := nri(t, cmd...)
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("nri %v: exit %d, no examples in\n%s", cmd, r.code, r.stdout)
		}
	}
	if r := nri(t, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "nri version ") {
		t.Errorf("--version: %d %q", r.code, r.stdout)
	}
}

// startServe starts nri serve and waits until it listens.
func startServe(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *safeBuffer) {
	t.Helper()
	cmd := exec.Command(nriBinary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout bytes.Buffer
	stderr := &safeBuffer{}
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pipe)
		once := false
		for sc.Scan() {
			stderr.write(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "listening on") {
				once = true
				close(listening)
			}
		}
		if !once {
			close(listening)
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-copied
		_ = cmd.Wait()
	})
	select {
	case <-listening:
	case <-time.After(scaled(30 * time.Second)):
		t.Fatal("nri serve did not start listening")
	}
	// cmd.Wait must not run before the copier has drained the pipe.
	return cmd, &stdout, stderr
}

// safeBuffer is a string buffer shared with the stderr copier.
type safeBuffer struct {
	mu chan struct{}
	b  strings.Builder
}

func (s *safeBuffer) lock() {
	if s.mu == nil {
		s.mu = make(chan struct{}, 1)
	}
	s.mu <- struct{}{}
}

func (s *safeBuffer) write(text string) { s.lock(); s.b.WriteString(text); <-s.mu }
func (s *safeBuffer) String() string    { s.lock(); defer func() { <-s.mu }(); return s.b.String() }

// waitExit waits for the command, with a hang guard.
func waitExit(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return 0
	case <-time.After(scaled(60 * time.Second)):
		_ = cmd.Process.Kill()
		t.Fatalf("%s did not exit", what)
		return -1
	}
}

// TestServe serves an external plugin (the logger, as a separate process
// of the same binary) and checks it appears in the JSON report.
func TestServe(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nri.sock")
	serve, stdout, stderr := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s", "--output", "json")
	plugin, pluginErr := startLogger(t, socket)
	if code := waitExit(t, serve, "nri serve"); code != 0 {
		t.Fatalf("nri serve exit %d\nstderr:\n%s", code, stderr)
	}
	if code := waitExit(t, plugin, "the plugin"); code != 0 {
		t.Errorf("plugin exit %d\n%s", code, pluginErr.String())
	}
	rep := decode(t, stdout.String())
	found := false
	for _, p := range rep.Plugins {
		if p.ID == "10-logger" && p.Kind == "external" && p.Calls > 0 {
			found = true
		}
	}
	if !found || !rep.OK || rep.Scenario != "serve" {
		t.Errorf("external logger not in the report (ok %v, scenario %q): %+v", rep.OK, rep.Scenario, rep.Plugins)
	}
	if !strings.Contains(pluginErr.String(), "CreateContainer") {
		t.Errorf("the logger logged no CreateContainer:\n%s", pluginErr.String())
	}
}

// startLogger starts `nri plugin logger` as an external plugin of the
// runtime at socket, its stderr in the buffer returned.
func startLogger(t *testing.T, socket string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	plugin := exec.Command(nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket)
	var stderr bytes.Buffer
	plugin.Stderr = &stderr
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Process.Kill() })
	return plugin, &stderr
}

// brokenPlugin writes a plugin executable that exits at once.
func brokenPlugin(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "60-broken")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeWithoutPlugins waits for a plugin that never comes; a launched
// plugin that fails is reported as it happens.
func TestServeWithoutPlugins(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nri.sock")
	start := time.Now()
	serve, _, stderr := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "2s", "--plugin", brokenPlugin(t))
	code := waitExit(t, serve, "nri serve")
	out := stderr.String()
	if code != exitPlugins || !strings.Contains(out, "waited for 1 external plugin(s), 0 registered") ||
		!strings.Contains(out, "nri: plugin 60-broken not registered:") {
		t.Errorf("exit %d, stderr:\n%s", code, out)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("gave up after %v, before the timeout", took)
	}
}

// TestRunBrokenPlugin adds a plugin that exits at once: the scenario
// plays, the report names the plugin, and the exit status says so.
func TestRunBrokenPlugin(t *testing.T) {
	r := nri(t, "run", "--output", "json", "--plugin", brokenPlugin(t))
	if r.code != exitPlugins {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, exitPlugins, r.stderr)
	}
	rep := decode(t, r.stdout)
	if len(rep.RegistrationErrors) != 1 || rep.RegistrationErrors[0].Plugin != "60-broken" || rep.RegistrationErrors[0].Reason == "" {
		t.Errorf("registration errors: %+v", rep.RegistrationErrors)
	}
	// The steps went as expected, but without the plugin: the run failed.
	if rep.OK || len(rep.Failures) != 1 || !strings.Contains(rep.Failures[0], "plugin 60-broken did not register") {
		t.Errorf("ok %v, failures %q", rep.OK, rep.Failures)
	}
}

// TestServeIdentityRefusal: under a policy that binds the logger's name to
// its DaemonSet's pods, the logger run by hand (a process in no
// container) is refused, and both it and nri serve say why.
func TestServeIdentityRefusal(t *testing.T) {
	dir := t.TempDir()
	socket, pol := filepath.Join(dir, "nri.sock"), filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("grants:\n  - plugins: [logger]\n    identity: {namespaces: [kube-system]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve, _, stderr := startServe(t, "--socket", socket, "--policy", pol, "--wait-plugins", "1", "--timeout", "5s")
	waitSocket(t, socket)
	plugin, pluginErr := startLogger(t, socket)
	if code := waitExit(t, plugin, "the plugin"); code == 0 {
		t.Errorf("the refused plugin exited with status 0:\n%s", pluginErr.String())
	}
	if code := waitExit(t, serve, "nri serve"); code != exitPlugins {
		t.Errorf("nri serve exit %d, want %d\nstderr:\n%s", code, exitPlugins, stderr)
	}
	want := `plugin \"10-logger\": the policy binds this name to another identity: ` + pol + `:2: grants[0] takes identity namespaces=[\"kube-system\"]; this plugin is external pid=`
	for what, out := range map[string]string{"the plugin": pluginErr.String(), "nri serve": stderr.String()} {
		if !strings.Contains(strings.ReplaceAll(out, `\\"`, `\"`), want) || !strings.Contains(out, "container=none") {
			t.Errorf("%s does not say why the plugin was refused (%s):\n%s", what, want, out)
		}
	}
	t.Logf("the plugin's stderr:\n%s", pluginErr.String())
}
