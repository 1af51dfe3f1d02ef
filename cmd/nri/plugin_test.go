package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitFile waits until the file at path holds substr.
func waitFile(t *testing.T, path, substr string) {
	t.Helper()
	deadline := time.Now().Add(scaled(30 * time.Second))
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), substr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no %q:\n%s", path, substr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPluginReconnects runs `nri plugin logger` as an external plugin of
// nri serve, kills nri serve (a runtime that crashes or restarts closes
// the connection without Shutdown) and starts it again on the same
// socket: the plugin reconnects by itself, the second runtime plays its
// scenario with it, and its Shutdown ends the plugin with status 0. The
// plugin logs to a file (-log-file), every line with a time.
func TestPluginReconnects(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "nri.sock")
	logFile := filepath.Join(dir, "logger.log")
	first, _, _ := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s", "--keep")
	plugin := exec.Command(nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket, "-log-file", logFile)
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Process.Kill() })
	waitFile(t, logFile, "msg=CreateContainer")
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFile(t, logFile, "connection to runtime ended")

	second, stdout, stderr := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s", "--output", "json")
	if code := waitExit(t, second, "the second nri serve"); code != 0 {
		t.Fatalf("second nri serve exit %d\nstderr:\n%s", code, stderr)
	}
	if code := waitExit(t, plugin, "the plugin"); code != 0 {
		t.Errorf("plugin exit %d after the second runtime's Shutdown", code)
	}
	found := false
	for _, p := range decode(t, stdout.String()).Plugins {
		found = found || (p.ID == "10-logger" && p.Kind == "external" && p.Calls > 0)
	}
	if !found {
		t.Errorf("the reconnected logger is not in the second runtime's report:\n%s", stdout)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"reconnected to runtime", "not reconnecting"} {
		if !strings.Contains(log, want) {
			t.Errorf("plugin log lacks %q:\n%s", want, log)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("log line without a time: %q", l)
		}
	}
	if fi, err := os.Stat(logFile); err != nil || fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("log file mode: %v %v, want at most 0640", fi, err)
	}
}

// TestPluginNoReconnect: with -reconnect=false the plugin exits with
// status 1 when the runtime goes away without Shutdown.
func TestPluginNoReconnect(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "nri.sock")
	serve, _, _ := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s", "--keep")
	logFile := filepath.Join(dir, "logger.log")
	plugin := exec.Command(nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket, "-reconnect=false", "-log-file", logFile)
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Process.Kill() })
	waitFile(t, logFile, "msg=CreateContainer")
	if err := serve.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, plugin, "the plugin")
	b, _ := os.ReadFile(logFile)
	if code != 1 || !strings.Contains(string(b), `level=ERROR msg="plugin failed"`) || !strings.Contains(string(b), "connection to runtime lost") {
		t.Errorf("plugin exit %d, want 1 with the lost connection logged:\n%s", code, b)
	}
}
