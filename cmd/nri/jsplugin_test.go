package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// TestServeJavaScriptPlugin serves the JavaScript plugin written from
// docs/protocol.md (plugins/js-env) as an external plugin and checks that
// its adjustment, the environment variable it injects, appears in the
// containers of `nri serve --output json`.
func TestServeJavaScriptPlugin(t *testing.T) {
	node, entry := runtimetest.JSPlugin(t, "../../plugins/js-env")
	socket := filepath.Join(t.TempDir(), "nri.sock")
	serve, stdout, stderr := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s", "--output", "json")
	plugin := exec.Command(node, entry, "--socket", socket, "--idx", "50", "--name", "js-env",
		"--env", "JS_PLUGIN=hello")
	var pluginErr bytes.Buffer
	plugin.Stderr = &pluginErr
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Process.Kill() })
	if code := waitExit(t, serve, "nri serve"); code != 0 {
		t.Fatalf("nri serve exit %d\nstderr:\n%s\nplugin:\n%s", code, stderr, pluginErr.String())
	}
	if code := waitExit(t, plugin, "the JavaScript plugin"); code != 0 {
		t.Errorf("JavaScript plugin exit %d\n%s", code, pluginErr.String())
	}
	rep := decode(t, stdout.String())
	registered := false
	for _, p := range rep.Plugins {
		if p.ID == "50-js-env" && p.Kind == "external" && p.Calls > 0 {
			registered = true
		}
	}
	if !registered {
		t.Fatalf("50-js-env is not in the report as a called external plugin: %+v", rep.Plugins)
	}
	if len(rep.Containers) == 0 {
		t.Fatal("the serve scenario created no containers")
	}
	for _, c := range rep.Containers {
		if c.State == "failed" {
			continue
		}
		if !slices.Contains(c.Env, "JS_PLUGIN=hello") {
			t.Errorf("container %s/%s lacks JS_PLUGIN=hello from the JavaScript plugin: %v", c.Pod, c.Name, c.Env)
		}
	}
}
