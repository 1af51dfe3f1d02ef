package conformance

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// checkLegacy runs the checker on the raw plugin in mode, launched or,
// if external, connecting to the checker's socket.
func checkLegacy(t *testing.T, mode string, external bool) *Report {
	t.Helper()
	cfg := PluginConfig{Command: helperCommand(mode), Env: helperEnvVars()}
	if external {
		path := shortSocketPath(t)
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		args := helperCommand(mode)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), helperEnv+"=1", helperSocketEnv+"="+path)
		startExternal(t, cmd)
		cfg = PluginConfig{Listener: l, Name: "30-" + mode}
	}
	r, err := CheckPlugin(testContext(t), cfg)
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	return r
}

// TestCheckPluginStateChangeFallback checks a plugin as NRI v0.11's stub
// builds it (memtierd, resctrl-mon and topology-aware of nri-plugins
// v0.14.0 are): it answers UNIMPLEMENTED to the RPCs that v0.12 added
// and serves those events through StateChange, which must carry the pod
// and the container. The checker falls back to StateChange as runtimes
// do, launched and external alike, and every check passes; the events
// that went through StateChange are listed.
func TestCheckPluginStateChangeFallback(t *testing.T) {
	for _, external := range []bool{false, true} {
		name := "launched"
		if external {
			name = "external"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := checkLegacy(t, "legacy", external)
			requireAllPassed(t, r)
			for _, ev := range legacyEvents.Events() {
				res := requireCheck(t, r, EventCheckName(ev))
				via := strings.Contains(res.Reason, "through StateChange")
				if via != api.StateChangeEvents.IsSet(ev) {
					t.Errorf("%s: %q; want it through StateChange only if it is one of %s", ev.Name(), res.Reason, api.StateChangeEvents)
				}
			}
			res := requireCheck(t, r, CheckStateChange)
			if !res.Informational || !strings.Contains(res.Reason, api.StateChangeEvents.String()) {
				t.Errorf("%s: %+v, want the events of %s", CheckStateChange, res, api.StateChangeEvents)
			}
			if res := requireCheck(t, r, CheckStaysUp); !strings.Contains(res.Reason, "RunPodSandbox still answered") {
				t.Errorf("%s: %q", CheckStaysUp, res.Reason)
			}
		})
	}
}

// TestCheckPluginStateChangeUnimplemented: a plugin subscribed to events
// it serves neither with their RPCs nor through StateChange fails each
// of them, with both answers in the reason; its CreateContainer passes.
func TestCheckPluginStateChangeUnimplemented(t *testing.T) {
	r := checkLegacy(t, "legacy-no-statechange", false)
	for _, ev := range legacyEvents.Events() {
		res := requireCheck(t, r, EventCheckName(ev))
		if ev == api.Event_CREATE_CONTAINER {
			if !res.Passed {
				t.Errorf("CreateContainer: %+v", res)
			}
			continue
		}
		if res.Passed || !strings.Contains(res.Reason, "answered UNIMPLEMENTED to "+ev.Name()+" and error Unimplemented") {
			t.Errorf("%s: %+v, want a failure with both answers", ev.Name(), res)
		}
	}
	if _, ok := r.Result(CheckStateChange); ok {
		t.Errorf("%s reported for a plugin that serves no event through StateChange", CheckStateChange)
	}
}
