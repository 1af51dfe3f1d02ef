package adaptation

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// createWorks checks that the runtime still serves its plugins.
func createWorks(t *testing.T, rt *testRuntime, id int, wantEnv string) {
	t.Helper()
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, id)})
	if err != nil {
		t.Fatalf("CreateContainer after misbehaviour: %v", err)
	}
	if got := strings.Join(envOf(rsp.Adjust), ","); got != wantEnv {
		t.Fatalf("CreateContainer after misbehaviour: env %q, want %q", got, wantEnv)
	}
}

// shortRegistration is the registration timeout of the tests of plugins
// that do not register: short, so that they end soon.
var shortRegistration = scaled(500 * time.Millisecond)

func TestRegistrationErrors(t *testing.T) {
	supported := api.AllEvents.Clear(api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX)
	rt := newTestRuntime(t, []testPlugin{
		{"10-good", helperArgs("stub", "-env", "GOOD=1", "-events", "CreateContainer")},
		{"30-wrong", helperArgs("raw", "-name", "other", "-idx", "31")},
	}, WithSupportedEvents(supported), WithRegistrationTimeout(shortRegistration))
	rt.start(t)

	create := api.Event_CREATE_CONTAINER.Mask()
	for _, tc := range []struct {
		name string
		args []string
		code string
		msg  string
	}{
		{"invalid name", []string{"-name", "bad/name", "-idx", "10"}, "InvalidArgument",
			`plugin registered with an invalid name: invalid plugin name "bad/name": character '/' not allowed (use [a-zA-Z0-9_.+-])`},
		{"invalid index", []string{"-name", "x", "-idx", "1"}, "InvalidArgument",
			`plugin "x" registered with an invalid index: invalid plugin index "1": must be two digits (00-99)`},
		{"unknown events", []string{"-name", "x", "-idx", "20", "-events", fmt.Sprint(0x10000 | int(create))}, "InvalidArgument",
			`plugin "20-x" subscribed to unknown events 0x10000`},
		{"unsupported events", []string{"-name", "x", "-idx", "20", "-events", fmt.Sprint(0x1800 | int(create))}, "FailedPrecondition",
			`plugin "20-x" subscribed to events this runtime does not support: UpdatePodSandbox,PostUpdatePodSandbox (0x1800); supported: ` + supported.String()},
		{"unknown capability", []string{"-name", "x", "-idx", "20", "-require-caps", "env,linux.teleport"}, "FailedPrecondition",
			`plugin "20-x" requires capabilities this runtime does not honour for it: "linux.teleport" (unknown); honoured: all`},
		{"configure error", []string{"-name", "x", "-idx", "20", "-configure-error", "bad config"}, "FailedPrecondition",
			`plugin "20-x" rejected its configuration: bad config`},
		{"configure timeout", []string{"-name", "x", "-idx", "20", "-behave", "configure-hang"}, "DeadlineExceeded",
			fmt.Sprintf(`plugin "20-x" did not answer Configure within %v`, shortRegistration)},
		{"duplicate of pre-installed", []string{"-name", "good", "-idx", "10"}, "AlreadyExists",
			`plugin name "10-good" is reserved for the pre-installed plugin ` + filepath.Join(rt.dir, "10-good")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label := "ext-" + strings.ReplaceAll(tc.name, " ", "-")
			ext := startExternal(t, rt.logs, label, helperArgs("raw", append([]string{"-socket", rt.socket}, tc.args...)...))
			want := "REGISTER error code=" + tc.code + " msg=" + tc.msg
			got := rt.logs.wait(t, "registration answer", output(label, "REGISTER"))
			if got.msg != want {
				t.Errorf("plugin got\n%s\nwant\n%s", got.msg, want)
			}
			rt.logs.wait(t, "runtime log line", func(r logRecord) bool {
				return r.msg == "plugin registration failed" && r.attrs["error"] == tc.msg
			})
			rt.logs.wait(t, "connection closed", output(label, "CLOSED"))
			ext.wait(t)
			createWorks(t, rt, 0, "GOOD=1")
		})
	}
	t.Run("pre-installed with another name", func(t *testing.T) {
		got := rt.logs.wait(t, "registration answer", output("30-wrong", "REGISTER"))
		want := `REGISTER error code=InvalidArgument msg=plugin "30-wrong" registered as "31-other"; a pre-installed plugin must use the name and index it was started with`
		if got.msg != want {
			t.Errorf("plugin got\n%s\nwant\n%s", got.msg, want)
		}
		rt.logs.wait(t, "process reaped", func(r logRecord) bool {
			return r.msg == "pre-installed plugin exited" && r.attrs["plugin"] == "30-wrong"
		})
	})
	if got := rt.logs.lines("10-good", "CONFIGURE"); len(got) != 0 {
		t.Errorf("stub plugin printed raw lines: %q", got)
	}
}

func TestConfigureRequestAdvertises(t *testing.T) {
	supported := api.MustParseEventMask("CreateContainer,StopContainer")
	rt := newTestRuntime(t, []testPlugin{{"10-raw", helperArgs("raw", "-events", fmt.Sprint(int(supported)))}},
		WithSupportedEvents(supported), WithMaxPluginRequestTimeout(3*time.Second), WithSynchronizeTimeout(4*time.Second))
	rt.start(t)
	got := rt.logs.wait(t, "Configure", output("10-raw", "CONFIGURE")) // printed before answering
	if want := fmt.Sprintf("CONFIGURE supported=0x%x max=3000 sync=4000", int(supported)); got.msg != want {
		t.Errorf("plugin saw %q, want %q", got.msg, want)
	}
	if p, ok := rt.plugin("10-raw"); !ok || p.Events != supported {
		t.Errorf("plugin info %+v", p)
	}
}

func TestMisbehavingPlugins(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-good", helperArgs("stub", "-env", "GOOD=1", "-events", "CreateContainer")},
		{"50-syncexit", helperArgs("raw", "-behave", "sync-exit")},
	}, WithRegistrationTimeout(shortRegistration))
	rt.start(t)

	t.Run("disconnects during Synchronize", func(t *testing.T) {
		rt.logs.wait(t, "sync failure", func(r logRecord) bool {
			return r.msg == "pre-installed plugin failed to start" && r.attrs["plugin"] == "50-syncexit" &&
				strings.Contains(r.attrs["error"], `plugin "50-syncexit" was lost during Synchronize`)
		})
		rt.logs.wait(t, "process reaped", func(r logRecord) bool {
			return r.msg == "pre-installed plugin exited" && r.attrs["plugin"] == "50-syncexit" && r.attrs["status"] == "exit status 4"
		})
		if _, ok := rt.plugin("50-syncexit"); ok {
			t.Error("plugin that failed Synchronize is registered")
		}
		createWorks(t, rt, 1, "GOOD=1")
	})
	t.Run("never registers", func(t *testing.T) {
		ext := startExternal(t, rt.logs, "lazy", helperArgs("raw", "-socket", rt.socket, "-behave", "never-register"))
		rt.logs.wait(t, "registration timeout", func(r logRecord) bool {
			return r.msg == "plugin registration failed" && strings.HasSuffix(r.attrs["error"], fmt.Sprintf("did not register within %v", shortRegistration))
		})
		rt.logs.wait(t, "connection closed", output("lazy", "CLOSED"))
		ext.wait(t)
		createWorks(t, rt, 2, "GOOD=1")
	})
	t.Run("registers twice", func(t *testing.T) {
		startExternal(t, rt.logs, "twice", helperArgs("raw", "-socket", rt.socket, "-name", "twice", "-idx", "20",
			"-behave", "register-twice", "-events", fmt.Sprint(int(api.Event_CREATE_CONTAINER.Mask()))))
		rt.logs.wait(t, "first answer", output("twice", "REGISTER ok"))
		got := rt.logs.wait(t, "second answer", output("twice", "REGISTER error"))
		if want := `REGISTER error code=FailedPrecondition msg=plugin "20-twice" already sent RegisterPlugin`; got.msg != want {
			t.Errorf("second registration got %q, want %q", got.msg, want)
		}
		rt.logs.wait(t, "synchronized", func(r logRecord) bool {
			return r.msg == "plugin synchronized" && r.attrs["plugin"] == "20-twice"
		})
		createWorks(t, rt, 4, "GOOD=1")
		rt.logs.wait(t, "event", output("twice", "EVENT CreateContainer"))
	})
	t.Run("garbage", func(t *testing.T) {
		ext := startExternal(t, rt.logs, "garbage", helperArgs("raw", "-socket", rt.socket, "-behave", "garbage"))
		rt.logs.wait(t, "runtime closed the connection", output("garbage", "GARBAGE closed"))
		rt.logs.wait(t, "registration failure", func(r logRecord) bool {
			return r.msg == "plugin registration failed" && strings.Contains(r.attrs["error"], "frame payload 4294967295 bytes exceeds maximum")
		})
		ext.wait(t)
		createWorks(t, rt, 3, "GOOD=1")
	})
}

func TestSocketSetup(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		rt := newTestRuntime(t, nil)
		rt.start(t)
		info, err := os.Stat(filepath.Dir(rt.socket))
		must(t, err)
		if perm := info.Mode().Perm(); perm != 0o700 {
			t.Errorf("socket directory mode %o, want 700", perm)
		}
		info, err = os.Lstat(rt.socket)
		must(t, err)
		if info.Mode()&fs.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
			t.Errorf("socket mode %v, want a socket with 0600", info.Mode())
		}
	})
	t.Run("stale", func(t *testing.T) {
		rt := newTestRuntime(t, nil)
		must(t, os.MkdirAll(filepath.Dir(rt.socket), 0o700))
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: rt.socket, Net: "unix"})
		must(t, err)
		l.SetUnlinkOnClose(false)
		l.Close()
		rt.start(t)
		rt.logs.wait(t, "stale socket removal", func(r logRecord) bool { return r.msg == "removed stale socket" })
		c, err := net.Dial("unix", rt.socket)
		must(t, err)
		c.Close()
	})
	t.Run("in use", func(t *testing.T) {
		rt := newTestRuntime(t, nil)
		must(t, os.MkdirAll(filepath.Dir(rt.socket), 0o700))
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: rt.socket, Net: "unix"})
		must(t, err)
		defer l.Close()
		err = rt.a.Start(ctxT(t))
		if err == nil || !strings.Contains(err.Error(), "is in use by another runtime") {
			t.Fatalf("Start with a live socket: %v", err)
		}
	})
}
