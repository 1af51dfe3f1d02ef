package adaptation

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// TestPreinstalledNameReserved: an external plugin cannot take the name
// of a pre-installed plugin while that one is down (here, during its
// restart backoff), and so cannot inherit what the administrator set for
// that name (here, required status); the same name under another index
// is another plugin and registers.
func TestPreinstalledNameReserved(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-good", helperArgs("stub", "-env", "GOOD=1", "-events", "CreateContainer")}},
		WithRestartLaunched(Backoff{Initial: time.Hour, Max: time.Hour}),
		WithPluginOverride("10-good", PluginPolicy{Required: true}))
	rt.start(t)
	createWorks(t, rt, 0, "GOOD=1")
	info, ok := rt.plugin("10-good")
	if !ok || info.PID == 0 {
		t.Fatalf("pre-installed plugin: %+v", rt.a.Plugins())
	}
	must(t, syscall.Kill(info.PID, syscall.SIGKILL))
	rt.waitGone(t, "10-good")

	startExternal(t, rt.logs, "squatter", helperArgs("stub", "-socket", rt.socket, "-name", "good", "-idx", "10",
		"-env", "SQUAT=1", "-events", "CreateContainer"))
	got := rt.logs.wait(t, "squatter's registration answer", output("squatter", "REGISTER")).msg
	want := `plugin name "10-good" is reserved for the pre-installed plugin ` + filepath.Join(rt.dir, "10-good")
	if !strings.HasPrefix(got, "REGISTER error") || !strings.Contains(got, want) {
		t.Errorf("squatter got %q, want a refusal saying %q", got, want)
	}
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
	var rerr *RequiredPluginError
	if !errors.As(err, &rerr) || rerr.Plugin != "10-good" {
		t.Errorf("CreateContainer with the required plugin down: %v (env %q), want a *RequiredPluginError for 10-good",
			err, envOf(rsp.GetAdjust()))
	}

	startExternal(t, rt.logs, "other-index", helperArgs("stub", "-socket", rt.socket, "-name", "good", "-idx", "20",
		"-env", "OTHER=1", "-events", "CreateContainer"))
	if got := rt.logs.wait(t, "registration answer", output("other-index", "REGISTER")).msg; got != "REGISTER ok" {
		t.Errorf("20-good got %q, want REGISTER ok", got)
	}
	if info, ok := rt.plugin("20-good"); !ok || info.Required || info.Kind != KindExternal {
		t.Errorf("20-good: %+v (registered %v), want an external plugin that is not required", info, ok)
	}
}

// TestReservedNames checks which names are reserved, with the plugin
// connecting on ServeConn: builtin names from New on, the names of the
// files of the plugin directory from Start on, including files that are
// not launched.
func TestReservedNames(t *testing.T) {
	dir := shortTempDir(t)
	must(t, os.WriteFile(filepath.Join(dir, "30-text"), []byte("not a plugin"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "README"), []byte("not a plugin name"), 0o644))
	st := runtimetest.NewStore()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", st.List, st.Update, WithPluginDir(dir), WithDisabledExternalConnections(),
		WithLogger(logs.logger()), WithRegistrationTimeout(2*time.Second),
		WithBuiltinPlugin("05", "inproc", &inproc{}))
	must(t, err)
	stopAtCleanup(t, a, logs)

	register := func(idx, name string) error {
		t.Helper()
		rtEnd, plEnd := net.Pipe()
		served := make(chan error, 1)
		go func() { served <- a.ServeConn(context.Background(), rtEnd) }()
		regErr := registerRaw(t, plEnd, idx, name)
		plEnd.Close()
		if err := <-served; regErr == nil || err == nil {
			t.Fatalf("registering %s-%s: plugin got %v, ServeConn returned %v; want both to fail", idx, name, regErr, err)
		}
		return regErr
	}
	if err := register("05", "inproc"); !strings.Contains(err.Error(), `plugin name "05-inproc" is reserved for a builtin plugin`) {
		t.Errorf("builtin name before Start: %v", err)
	}
	must(t, a.Start(ctxT(t)))
	if err := register("30", "text"); !strings.Contains(err.Error(), `plugin name "30-text" is reserved for the pre-installed plugin `+filepath.Join(dir, "30-text")) {
		t.Errorf("name of a file of the plugin directory: %v", err)
	}
	// Not reserved: the plugin gets as far as Configure, which it does
	// not answer.
	if err := register("31", "text"); strings.Contains(err.Error(), "reserved") {
		t.Errorf("a name no file has: %v", err)
	}
}
