package conformance

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/internal/testing/testscale"
)

// jsPluginDir is the JavaScript plugin, relative to this package.
const jsPluginDir = "../plugins/js-env"

// jsPlugin returns the node binary and the plugin's entry point, skipping
// the test if either node or the plugin's npm dependencies are missing.
func jsPlugin(t *testing.T) (node, plugin string) {
	t.Helper()
	return runtimetest.JSPlugin(t, jsPluginDir)
}

func TestJSPluginLaunched(t *testing.T) {
	node, plugin := jsPlugin(t)
	r, err := CheckPlugin(testContext(t), PluginConfig{
		Command: []string{node, plugin},
		Name:    "40-js-env",
	})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	requireAllPassed(t, r)
	create := requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER))
	if !strings.HasPrefix(create.Reason, "adjusts env[JS_PLUGIN]; ") {
		t.Errorf("CreateContainer answer %q: want one env adjustment", create.Reason)
	}
	if sub := requireCheck(t, r, CheckSubscription); !strings.HasPrefix(sub.Reason, "CreateContainer (0x8)") {
		t.Errorf("subscription %q, want CreateContainer only", sub.Reason)
	}
	if probe := requireCheck(t, r, CheckProbe); !strings.Contains(probe.Reason, "RunPodSandbox: UNIMPLEMENTED") {
		t.Errorf("unsubscribed events %q: want UNIMPLEMENTED answers", probe.Reason)
	}
}

func TestJSPluginRejectsBadConfig(t *testing.T) {
	node, plugin := jsPlugin(t)
	r, err := CheckPlugin(testContext(t), PluginConfig{
		Command: []string{node, plugin},
		Config:  "# a comment\njust-a-word\n",
	})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	res := requireCheck(t, r, CheckConfigure)
	if res.Passed || !strings.Contains(res.Reason, "not KEY=VALUE") {
		t.Fatalf("Configure check = %+v, want a failure with the plugin's reason", res)
	}
}

func TestJSPluginExternal(t *testing.T) {
	node, plugin := jsPlugin(t)
	path := shortSocketPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, plugin, "--socket", path, "--idx", "60", "--name", "js-external", "--env", "FROM=js")
	startExternal(t, cmd)
	r, err := CheckPlugin(testContext(t), PluginConfig{Listener: l, Name: "60-js-external"})
	if err != nil {
		t.Fatalf("CheckPlugin: %v", err)
	}
	requireAllPassed(t, r)
	requireCheck(t, r, EventCheckName(api.Event_CREATE_CONTAINER))
}

// TestJSPluginUnitTests runs the plugin's own tests (node --test), which
// include the byte-exact RegisterPlugin exchange of docs/protocol.md.
func TestJSPluginUnitTests(t *testing.T) {
	node, plugin := jsPlugin(t)
	cmd := exec.Command(node, "--test", "test/")
	cmd.Dir = filepath.Dir(plugin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}

// TestJSPluginWithNrikitRuntime runs the JavaScript plugin as a
// pre-installed plugin of nrikit's runtime and creates a container.
func TestJSPluginWithNrikitRuntime(t *testing.T) {
	node, plugin := jsPlugin(t)
	ctx := testContext(t)
	dir := t.TempDir()
	script := "#!/bin/sh\nexec " + node + " " + plugin + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "50-js-env"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorld()
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) { return w.pods, w.containers, nil }
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("test-runtime", "v1.0.0", list, update,
		adaptation.WithPluginDir(dir), adaptation.WithConfigDir(t.TempDir()),
		adaptation.WithSocketPath(shortSocketPath(t)), adaptation.WithDisabledExternalConnections(),
		// node starting, and the plugin loading its modules, take seconds
		// on a busy machine: the defaults (5s to register, 2s an answer)
		// are for a plugin already running; what this test shows is that
		// the plugin works with the runtime, not how fast.
		adaptation.WithRegistrationTimeout(testscale.D(20*time.Second)),
		adaptation.WithRequestTimeout(testscale.D(10*time.Second)))
	if err != nil {
		t.Fatalf("adaptation.New: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	resp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: w.newPod, Container: w.newCtr})
	if err != nil {
		t.Fatalf("CreateContainer: %v (plugins: %+v)", err, a.Plugins())
	}
	var found bool
	for _, kv := range resp.GetAdjust().GetEnv() {
		found = found || (kv.GetKey() == "JS_PLUGIN" && kv.GetValue() == "hello")
	}
	if !found {
		t.Fatalf("adjustment %v lacks JS_PLUGIN=hello (plugins: %+v)", resp.GetAdjust(), a.Plugins())
	}
}
