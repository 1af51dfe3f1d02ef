package cri

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/conformance"
	"github.com/nrikit/nrikit/conformance/cri/fakecri"
	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// fakeImage is the fake runtime's image.
const fakeImage = "localhost/fake:1"

// startFake starts a fake runtime on nrikit with faults f.
func startFake(t *testing.T, f fakecri.Faults) *fakecri.Runtime {
	return fakecri.Start(t, fakecri.Config{RequestTimeout: fakeTimeout(), Images: []string{fakeImage}, Faults: f})
}

// fakeTimeout is the fake runtime's NRI request timeout: long enough to
// hold hooks on a loaded machine.
func fakeTimeout() time.Duration { return min(testscale.D(3*time.Second), 8*time.Second) }

// runChecks runs the checks matching only ("" for all) against r.
func runChecks(t *testing.T, r *fakecri.Runtime, only string) *conformance.Report {
	t.Helper()
	cfg := Config{NRISocket: r.NRISocket, CRISocket: r.CRISocket, Image: fakeImage, Command: []string{"sleep", "3600"},
		CheckTimeout: testscale.D(time.Minute)}
	if only != "" {
		cfg.Run = regexp.MustCompile(only)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func reportText(t *testing.T, rep *conformance.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wantSkipped are the checks the fake runtime cannot take: it has no pod
// network, no CDI devices and does not run containers.
var wantSkipped = map[string]bool{
	CheckStopPodHeldNetwork:                     true,
	"adjusted CDI device reaches the container": true,
}

// TestNrikitRuntimePasses runs every check against a runtime on nrikit's
// runtime library: all pass but those the fake runtime cannot take, and
// the run leaves nothing behind.
func TestNrikitRuntimePasses(t *testing.T) {
	r := startFake(t, fakecri.Faults{})
	rep := runChecks(t, r, "")
	text := reportText(t, rep)
	t.Logf("report:\n%s", text)
	if len(rep.Results) != len(Checks())+1 {
		t.Errorf("%d results, want one per check and the sweep (%d)", len(rep.Results), len(Checks())+1)
	}
	for _, res := range rep.Results {
		switch {
		case wantSkipped[res.Name] && !res.Skipped:
			t.Errorf("%s: not skipped: %s", res.Name, res.Reason)
		case !res.Passed:
			t.Errorf("%s failed: %s", res.Name, res.Reason)
		case res.Skipped && !wantSkipped[res.Name] && !strings.Contains(res.Reason, "NUMA") && !strings.Contains(res.Reason, "cgroup v2"):
			t.Errorf("%s skipped: %s", res.Name, res.Reason)
		}
	}
	if pods, ctrs := r.Objects(); pods > 0 || ctrs > 0 {
		t.Errorf("left %d pods and %d containers", pods, ctrs)
	}
}

// TestChecksCatchRuntimeBugs gives the fake runtime each bug of a real
// runtime that a check is for: that check fails, with the reason.
func TestChecksCatchRuntimeBugs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults fakecri.Faults
		check  string
		reason string
	}{
		{"pod READY while RunPodSandbox held", fakecri.Faults{ReadyWhileRunning: true}, CheckRunHeldHidden, "SANDBOX_READY while RunPodSandbox is held"},
		{"container listed while CreateContainer held", fakecri.Faults{ListWhileCreating: true}, CheckCreateHeldHidden, "while its CreateContainer is held"},
		{"failed pod kept (containerd#13609)", fakecri.Faults{KeepFailedPod: true}, CheckRunFailure, "the failed pod is still listed"},
		{"container in a stopped pod (containerd#13599)", fakecri.Faults{CreateInStoppedPod: true}, CheckCreateStoppedPod, "in the stopped pod succeeded"},
		{"empty container name (cri-o#10011)", fakecri.Faults{EmptyContainerName: true}, CheckContainerEvents, `container name ""`},
		{"evictions ignored", fakecri.Faults{IgnoreEvictions: true}, CheckEvictUnsolicited, "still CONTAINER_RUNNING"},
		{"answers' updates ignored", fakecri.Faults{IgnoreUpdateAnswers: true}, CheckUpdateFromStop, "memory limit is 0"},
		{"StopPodSandbox before the containers stop", fakecri.Faults{RunningDuringStop: true}, CheckStopPodHeldState, "want CONTAINER_EXITED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startFake(t, tc.faults)
			rep := runChecks(t, r, "^"+regexp.QuoteMeta(checkID(t, tc.check))+"$")
			res, ok := rep.Result(tc.check)
			if !ok {
				t.Fatalf("no result for %q:\n%s", tc.check, reportText(t, rep))
			}
			if res.Passed || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("%s: passed %v, reason %q; want a failure saying %q", tc.check, res.Passed, res.Reason, tc.reason)
			}
		})
	}
}

// checkID returns the ID of the check called name.
func checkID(t *testing.T, name string) string {
	t.Helper()
	for _, c := range Checks() {
		if c.Name == name {
			return c.ID
		}
	}
	t.Fatalf("no check %q", name)
	return ""
}

// TestChecksTable checks the table itself: unique IDs and names, IDs fit
// for names and labels, and a description for each.
func TestChecksTable(t *testing.T) {
	ids, names := map[string]bool{}, map[string]bool{}
	valid := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	for _, c := range Checks() {
		if ids[c.ID] || names[c.Name] {
			t.Errorf("check %q (%s) repeated", c.Name, c.ID)
		}
		ids[c.ID], names[c.Name] = true, true
		if !valid.MatchString(c.ID) || len(c.ID) > 24 {
			t.Errorf("check ID %q: want lowercase words joined by dashes, at most 24 characters", c.ID)
		}
		if len(c.Name) > 52 {
			t.Errorf("check name %q is longer than the report's column (52)", c.Name)
		}
		if c.Decides == "" || c.run == nil {
			t.Errorf("check %s: no description or no run", c.ID)
		}
	}
}

// TestRuntimeCrash: a runtime that stops answering during a check (CRI-O
// on NRI v0.11.0 panics on a sysctl adjustment) fails that check saying
// so, and the checks after it are skipped with the reason instead of
// failing one by one.
func TestRuntimeCrash(t *testing.T) {
	r := startFake(t, fakecri.Faults{CrashOnSysctl: true})
	cfg := Config{NRISocket: r.NRISocket, CRISocket: r.CRISocket, Image: fakeImage, Parallel: 1,
		Run: regexp.MustCompile(`^adjust-(sysctl|seccomp-policy)$`), CheckTimeout: testscale.D(time.Minute)}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := reportText(t, rep)
	sysctl, _ := rep.Result("adjusted sysctl reaches the container")
	seccomp, _ := rep.Result("adjusted seccomp policy reaches the container")
	sweep, _ := rep.Result(CheckLeftovers)
	if sysctl.Passed || !strings.Contains(sysctl.Reason, "stopped answering CRI during this check") {
		t.Errorf("the check that crashed the runtime: %+v\n%s", sysctl, text)
	}
	for _, res := range []conformance.Result{seccomp, sweep} {
		if !res.Skipped || !strings.Contains(res.Reason, "stopped answering CRI during adjust-sysctl") {
			t.Errorf("a check after the crash: %+v\n%s", res, text)
		}
	}
}
