package adaptation

import (
	"errors"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

func TestPluginErrorFailsRequest(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-fail", helperArgs("stub", "-fail", "CreateContainer")}})
	rt.start(t)
	_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var perr *PluginError
	if !errors.As(err, &perr) || perr.Kind != FailureRejected || perr.Plugin != "10-fail" {
		t.Fatalf("error %v, want a rejection by 10-fail", err)
	}
	if want := `plugin "10-fail" failed CreateContainer: CreateContainer refused by test plugin`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if p, ok := rt.plugin("10-fail"); !ok || p.State != StateActive {
		t.Error("plugin that answered with an error was disconnected")
	}
	// Notifications never fail.
	if err := rt.a.RemoveContainer(ctxT(t), &api.RemoveContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err != nil {
		t.Errorf("notification failed: %v", err)
	}
}

func TestTimeoutAndFailurePolicy(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name      string
		args      []string
		override  *PluginPolicy
		wantErr   string
		connected bool
	}{
		{name: "default disconnects and proceeds"},
		{name: "fail_request fails", args: []string{"-fail-request"},
			wantErr: `plugin "10-hang" did not answer CreateContainer within 300ms`},
		{name: "keep_connected keeps", args: []string{"-keep-connected"}, connected: true},
		{name: "override takes precedence", args: []string{"-fail-request"},
			override: &PluginPolicy{FailurePolicy: &api.FailurePolicy{KeepConnected: true}}, connected: true},
		{name: "required fails", override: &PluginPolicy{Required: true},
			wantErr: `required plugin "10-hang" is missing: plugin "10-hang" did not answer CreateContainer within 300ms`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []Option{WithRequestTimeout(timeout)}
			if tc.override != nil {
				opts = append(opts, WithPluginOverride("10-hang", *tc.override))
			}
			rt := newTestRuntime(t, []testPlugin{
				{"10-hang", helperArgs("stub", append([]string{"-hang", "CreateContainer"}, tc.args...)...)},
				{"20-good", helperArgs("stub", "-env", "GOOD=1")},
			}, opts...)
			rt.start(t)
			start := time.Now()
			rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
			if took := time.Since(start); took < timeout {
				t.Errorf("CreateContainer returned after %v, before the timeout", took)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				var perr *PluginError
				if !errors.As(err, &perr) || perr.Kind != FailureTimeout {
					t.Errorf("error %v does not wrap a timeout *PluginError", err)
				}
			case err != nil:
				t.Fatalf("CreateContainer: %v", err)
			default:
				if got := envOf(rsp.Adjust); len(got) != 1 || got[0] != "GOOD=1" {
					t.Errorf("adjustment %v, want the good plugin's", got)
				}
			}
			if tc.connected {
				if _, ok := rt.plugin("10-hang"); !ok {
					t.Error("plugin was disconnected")
				}
				return
			}
			rt.waitGone(t, "10-hang")
			rt.logs.wait(t, "process reaped", func(r logRecord) bool {
				return r.msg == "pre-installed plugin exited" && r.attrs["plugin"] == "10-hang"
			})
			if tc.override != nil && tc.override.Required {
				_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
				var rerr *RequiredPluginError
				if !errors.As(err, &rerr) || err.Error() != `required plugin "10-hang" is not connected` {
					t.Errorf("CreateContainer without the required plugin: %v", err)
				}
			}
		})
	}
}

func TestCrashMidRequest(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-crash", helperArgs("stub", "-crash", "CreateContainer")},
		{"20-good", helperArgs("stub", "-env", "GOOD=1")},
	})
	rt.start(t)
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	if err != nil {
		t.Fatalf("CreateContainer with a crashing plugin: %v", err)
	}
	if got := envOf(rsp.Adjust); len(got) != 1 || got[0] != "GOOD=1" {
		t.Errorf("adjustment %v", got)
	}
	rt.waitGone(t, "10-crash")
	rt.logs.wait(t, "lost plugin logged", func(r logRecord) bool {
		return r.msg == "plugin lost" && r.attrs["plugin"] == "10-crash" && r.attrs["event"] == "CreateContainer"
	})
	rt.logs.wait(t, "process reaped", func(r logRecord) bool {
		return r.msg == "pre-installed plugin exited" && r.attrs["plugin"] == "10-crash" && r.attrs["status"] == "exit status 3"
	})
}

func TestRequiredPluginMissing(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"20-good", helperArgs("stub", "-env", "GOOD=1")}},
		WithPluginOverride("10-needed", PluginPolicy{Required: true}))
	rt.start(t)
	_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var rerr *RequiredPluginError
	if !errors.As(err, &rerr) || rerr.Plugin != "10-needed" {
		t.Fatalf("error %v, want a *RequiredPluginError", err)
	}
	// Other events are not affected.
	if err := rt.a.StartContainer(ctxT(t), &api.StartContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err != nil {
		t.Errorf("StartContainer: %v", err)
	}
	startExternal(t, rt.logs, "needed", helperArgs("stub", "-socket", rt.socket, "-name", "needed", "-idx", "10"))
	rt.logs.wait(t, "required plugin synchronized", func(r logRecord) bool {
		return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-needed"
	})
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)}); err != nil {
		t.Errorf("CreateContainer with the required plugin: %v", err)
	}
}

func TestPluginRequestTimeout(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-short", helperArgs("raw", "-timeout", "50ms")},
		{"20-long", helperArgs("raw", "-timeout", "1h")},
		{"30-none", helperArgs("raw")},
	}, WithRequestTimeout(time.Second), WithMaxPluginRequestTimeout(3*time.Second))
	rt.start(t)
	for full, want := range map[string]time.Duration{"10-short": 50 * time.Millisecond, "20-long": 3 * time.Second, "30-none": time.Second} {
		if p, ok := rt.plugin(full); !ok || p.RequestTimeout != want {
			t.Errorf("%s: request timeout %v, want %v", full, p.RequestTimeout, want)
		}
	}
}

// TestStopContainerErrorTellsLaterPlugins: a plugin's error answer to
// StopContainer is returned, but the plugins after it are still told and
// their updates kept out of a failed event only (containerd/nri#286: Stop
// errors must not block teardown, and later plugins are still told).
// Other mutating events still stop at the first error
// (TestPluginErrorFailsRequest).
func TestStopContainerErrorTellsLaterPlugins(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-fail", helperArgs("stub", "-fail", "StopContainer")},
		{"20-later", helperArgs("stub")},
	})
	rt.start(t)
	_, err := rt.a.StopContainer(ctxT(t), &api.StopContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var perr *PluginError
	if !errors.As(err, &perr) || perr.Plugin != "10-fail" || perr.Kind != FailureRejected {
		t.Fatalf("error %v, want the rejection by 10-fail", err)
	}
	rt.logs.wait(t, "the later plugin's StopContainer", output("20-later", "EVENT StopContainer"))
}
