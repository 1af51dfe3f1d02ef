package simulator

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// helperScenario is a scenario whose plugins are the test binary as
// helper processes (see helper_test.go); %MODE% selects their mode.
const helperScenario = `name: helpers
pods:
  - name: p
    namespace: ns
    labels: {app: x}
containers:
  - name: a
    pod: p
    args: [app]
    resources: {cpuShares: 100, memoryLimit: 64Mi}
  - name: b
    pod: p
plugins:
  - name: one
    index: "10"
    path: %EXE%
    args: [-test.run=^TestHelperProcess$, --, %MODE%]
  - name: two
    index: "20"
    path: %EXE%
    args: [-test.run=^TestHelperProcess$, --, %MODE%]
policy:
  grants:
    - plugins: [one]
      where: {containerNames: [a]}
      adjust: {env: ["*"]}
      update: {cpu: {}}
  default:
    adjust: {env: ["*"]}
    update: {cpu: {}}
steps:
  - runPod: p
  - createContainer: a
  - updateContainer: a
    resources: {memoryLimit: 128Mi}
  - createContainer: b
  - stopContainer: a
  - removeContainer: a
  - removeContainer: b
  - stopPod: p
  - removePod: p
`

// play plays the helper scenario text with the helpers in mode.
func play(t *testing.T, text, mode string, opts ...Option) *report.Report {
	t.Helper()
	t.Setenv(helperEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text = strings.NewReplacer("%EXE%", exe, "%MODE%", mode).Replace(text)
	sc, err := scenario.Parse("helpers.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(sc, append([]Option{WithTimeouts(10*time.Second, 10*time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	defer func() {
		if err := sim.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := sim.Play(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Play(ctx); err == nil {
		t.Error("a second Play succeeded")
	}
	return r
}

func event(r *report.Report, name, container string) *report.Event {
	for i := range r.Events {
		if e := &r.Events[i]; e.Event == name && e.Container == container {
			return e
		}
	}
	return nil
}

func reportedContainer(r *report.Report, name string) *report.Container {
	for i := range r.Containers {
		if c := &r.Containers[i]; c.Name == name {
			return c
		}
	}
	return nil
}

func TestPlay(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := play(t, helperScenario, "env")
	if !r.OK || len(r.RegistrationErrors) != 0 {
		t.Fatalf("failures %v, registration errors %v", r.Failures, r.RegistrationErrors)
	}
	var ids []string
	for _, p := range r.Plugins {
		ids = append(ids, p.ID+"/"+p.Kind)
	}
	if !slices.Equal(ids, []string{"10-one/pre-installed", "20-two/pre-installed"}) {
		t.Errorf("plugins %v", ids)
	}
	a := reportedContainer(r, "a")
	if a.State != "removed" || !slices.Contains(a.Env, "HELPER_one=1") || !slices.Contains(a.Env, "HELPER_two=1") {
		t.Errorf("container a: state %s env %v", a.State, a.Env)
	}
	if got := *a.Spec.Linux.Resources.CPU.Shares; got != 777 {
		t.Errorf("CPU shares after the update = %d, want the plugins' 777", got)
	}
	if got := *a.Spec.Linux.Resources.Memory.Limit; got != 128<<20 {
		t.Errorf("memory limit after the update = %d", got)
	}
	diff := map[string]string{}
	for _, d := range a.Diff {
		diff[d.Path] = d.Kind.String()
	}
	if diff["process.env[HELPER_one]"] != "added" || diff["linux.resources.cpu.shares"] != "modified" {
		t.Errorf("diff %v", a.Diff)
	}
	b := reportedContainer(r, "b")
	// The policy's where confines plugin one to container a.
	if b.State != "removed" || slices.Contains(b.Env, "HELPER_one=1") || !slices.Contains(b.Env, "HELPER_two=1") {
		t.Errorf("container b: %s: env %v, want plugin one's where to keep it out", b.State, b.Env)
	}
	if cb := event(r, "CreateContainer", "b"); cb == nil || !slices.Equal(cb.Filtered, []string{"10-one"}) {
		t.Errorf("CreateContainer b: %+v, want 10-one filtered", cb)
	}
	create := event(r, "CreateContainer", "a")
	if create == nil || !slices.Equal(create.Called, []string{"10-one", "20-two"}) {
		t.Fatalf("CreateContainer a: %+v", create)
	}
	if len(create.Changes) != 2 || create.Changes[0] != (report.Change{Plugin: "10-one", Container: "a", Field: "env[HELPER_one]", Value: "1"}) {
		t.Errorf("changes %+v", create.Changes)
	}
	upd := event(r, "UpdateContainer", "a")
	if upd == nil || !slices.ContainsFunc(upd.Changes, func(c report.Change) bool {
		return c.Plugin == "20-two" && c.Field == "linux.resources.cpu.shares" && c.Value == "777"
	}) {
		t.Errorf("UpdateContainer a: %+v", upd)
	}
	if e := event(r, "RemoveContainer", "b"); e == nil || e.Step != 7 {
		t.Errorf("container b was not removed at step 7: %+v", e)
	}
	if e := event(r, "RunPodSandbox", ""); e == nil || len(e.Called) != 0 || len(e.Filtered) != 0 {
		t.Errorf("RunPodSandbox (no plugin subscribed): %+v", e)
	}
}

// TestConflict checks that conflicting plugins fail the creation, and that
// an unexpected failure fails the run and skips the steps that depend on
// it.
func TestConflict(t *testing.T) {
	defer goleak.VerifyNone(t)
	r := play(t, helperScenario, "conflict")
	if r.OK || len(r.Failures) == 0 {
		t.Fatal("the run succeeded")
	}
	if !strings.Contains(r.Failures[0], "step 2 (createContainer a): unexpected error:") || !strings.Contains(r.Failures[0], "SHARED") {
		t.Errorf("failures %v", r.Failures)
	}
	if !slices.ContainsFunc(r.Failures, func(f string) bool { return strings.Contains(f, "step 3 (updateContainer a): skipped") }) {
		t.Errorf("the update was not skipped: %v", r.Failures)
	}
	if e := event(r, "CreateContainer", "a"); e == nil || e.OK || !strings.Contains(e.Error, "SHARED") {
		t.Errorf("event %+v", e)
	}
	if c := reportedContainer(r, "a"); c.State != "failed" || len(c.Diff) != 0 {
		t.Errorf("container a: %+v", c)
	}
	// Expecting the conflict makes the run pass.
	expected := helperScenario[:strings.Index(helperScenario, "steps:")] +
		"steps:\n  - runPod: p\n  - createContainer: a\n    expectError: SHARED\n  - stopPod: p\n  - removePod: p\n"
	if r := play(t, expected, "conflict"); !r.OK {
		t.Errorf("expected conflict reported as a failure: %v", r.Failures)
	}
}
