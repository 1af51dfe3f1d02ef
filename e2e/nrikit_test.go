package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The tests of this file check what nrikit's runtime library does inside
// containerd (NRIKIT_E2E_RUNTIME=nrikit, issue 15) that upstream's NRI
// does not; on upstream's they are skipped, except TestPluginScope, which
// checks the stub's own enforcement there. (Shutdown on containerd's stop
// is not among them: containerd v2.4.2 never stops its NRI — nothing calls
// internal/nri's Stop, and the server's shutdown closes only plugins that
// are io.Closers, which internal/nri's is not — so plugins see their
// connection close, on either NRI.)

// requireNrikit skips t unless containerd runs on nrikit.
func requireNrikit(t *testing.T) {
	t.Helper()
	if !suite.nrikit {
		t.Skipf("%s runs upstream's NRI; %s=nrikit runs this test", runtimeKind(), runtimeEnv)
	}
}

// TestSupportedEvents: containerd on nrikit advertises the events it
// delivers, and the stub subscribes from that advertisement instead of
// guessing from the NRI version.
func TestSupportedEvents(t *testing.T) {
	requireNrikit(t)
	r := newRuntime(t, harness.Options{})
	r.start()
	logger := r.samplePlugin("logger", "10")
	line := lineWith(logger.Log(), "configuring plugin")
	if !strings.Contains(line, `basis="advertised by the runtime"`) || !strings.Contains(line, "supported=RunPodSandbox,") {
		t.Fatalf("the plugin did not get the runtime's supported events:\n%s", logger.Log())
	}
	evidence(t, "logger: %s", strings.TrimSpace(line))
}

// TestPluginScope: a plugin declaring a scope (stub.WithScope, here the
// logger's -namespace flag) never handles an out-of-scope pod's events.
// On nrikit's runtime the runtime does not even send them (the plugin's
// debug log shows no event answered on its behalf by the stub's scope
// gate); on upstream's, which sends everything, the stub answers them
// without calling the handler.
func TestPluginScope(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	logger := r.samplePlugin("logger", "10", "-namespace", "ml", "-log-level", "debug")
	r.run(harness.NewPod("default", "web"), harness.NewContainer("nginx"))
	r.run(harness.NewPod("ml", "trainer"), harness.NewContainer("train"))
	wantLog(t, r.ctx, logger, "msg=CreateContainer pod=ml/trainer")
	log := logger.Log()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "pod=default/web") && !strings.Contains(line, "event out of the plugin's scope") {
			t.Errorf("the scoped plugin's handler saw the out-of-scope pod: %s", line)
		}
	}
	gated := strings.Count(log, "event out of the plugin's scope")
	switch {
	case suite.nrikit && gated > 0:
		t.Errorf("nrikit's runtime sent %d out-of-scope events to the plugin:\n%s", gated, log)
	case !suite.nrikit && gated == 0:
		t.Errorf("upstream's runtime sends every event, but the stub's scope gate answered none:\n%s", log)
	}
	evidence(t, "out-of-scope events the stub answered itself: %d (nrikit runtime: %v)", gated, suite.nrikit)
}

// TestInvalidIndexReason: a plugin built with upstream's stub registering
// with an invalid index gets the reason in its RegisterPlugin error, not
// a closed connection.
func TestInvalidIndexReason(t *testing.T) {
	requireNrikit(t)
	r := newRuntime(t, harness.Options{})
	r.start()
	p := r.startExternal("1x-upstream", filepath.Join(suite.bin, "upstreamplugin"), "-mode", "env", "-socket", r.NRISocket,
		"-idx", "1x", "-name", "upstream")
	if _, err := p.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if out := p.Log(); !strings.Contains(out, "invalid plugin index") || !strings.Contains(out, `"1x"`) {
		t.Fatalf("the plugin's error does not give the reason:\n%s", out)
	}
	evidence(t, "upstream-stub plugin: %s", strings.TrimSpace(lineWith(p.Log(), "invalid plugin index")))
}

// TestFrozenPlugin: a plugin stopped with SIGSTOP does not hold up pod
// creation beyond the request timeout: the runtime library waits for it
// once, then disconnects it.
func TestFrozenPlugin(t *testing.T) {
	requireNrikit(t)
	const timeout = 2 * time.Second
	r := newRuntime(t, harness.Options{RequestTimeout: timeout})
	r.start()
	frozen := r.samplePlugin("logger", "10", "-name", "frozen")
	r.samplePlugin("gpu-env", "50", "-all")
	if err := syscall.Kill(frozen.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(frozen.Pid(), syscall.SIGCONT) })
	var took []string
	for i := range 3 {
		start := time.Now()
		_, _, info := r.run(harness.NewPod("default", fmt.Sprintf("app%d", i)), harness.NewContainer("app"))
		took = append(took, time.Since(start).Round(time.Millisecond).String())
		wantEnv(t, info, "NVIDIA_VISIBLE_DEVICES", "void")
	}
	// What the frozen plugin cost is the time the runtime library waited
	// for it, from its log (the pods' wall time is mostly the runtime's
	// own work, seconds on a busy machine): one event waited out the
	// request timeout, then the plugin was disconnected and asked nothing
	// more.
	waited, asked := frozenWaits(t, r.Log(), "10-frozen")
	if asked == 0 || waited > 2*timeout {
		t.Errorf("the runtime waited %s for the frozen plugin over %d events, want at least one event and at most twice the request timeout %s", waited, asked, timeout)
	}
	disconnected := logLine(r.Log(), "10-frozen", `msg="plugin disconnected"`)
	if disconnected == "" {
		t.Errorf("the runtime's log does not say that it disconnected the frozen plugin")
	}
	evidence(t, "%s waited %s in all for the frozen plugin (%d event(s)), then: %s; pods created and started in %s",
		r.Kind(), waited.Round(time.Millisecond), asked, disconnected, strings.Join(took, ", "))
}

// frozenWaits sums the time nrikit's runtime library waited for plugin's
// answers (its "plugin answered" records, took=DURATION) and counts them.
func frozenWaits(t *testing.T, log, plugin string) (time.Duration, int) {
	t.Helper()
	var sum time.Duration
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="plugin answered"`) || !slices.Contains(strings.Fields(line), "plugin="+plugin) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "took="); ok {
				d, err := time.ParseDuration(v)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				sum += d
				n++
			}
		}
	}
	return sum, n
}
