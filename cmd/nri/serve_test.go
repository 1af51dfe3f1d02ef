package main

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeMetrics checks nri serve --metrics-addr: after the scenario
// played for an external plugin, /metrics shows the requests the runtime
// library sent it.
func TestServeMetrics(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "nri.sock")
	_, _, stderr := startServe(t, "--socket", socket, "--wait-plugins", "1", "--timeout", "30s",
		"--metrics-addr", "127.0.0.1:0", "--keep")
	m := regexp.MustCompile(`serving metrics on http://(127\.0\.0\.1:\d+)/metrics`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address in\n%s", stderr)
	}
	plugin := exec.Command(nriBinary, "plugin", "logger", "-idx", "10", "-socket", socket)
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Process.Kill(); _ = plugin.Wait() })

	deadline := time.Now().Add(scaled(60 * time.Second))
	for !strings.Contains(stderr.String(), "still serving") {
		if time.Now().After(deadline) {
			t.Fatalf("the scenario did not finish:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	rsp, err := client.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^nri_plugin_requests_total\{plugin="10-logger",request="CreateContainer"\} [1-9]`),
		regexp.MustCompile(`(?m)^nri_plugins 1$`),
	} {
		if !want.Match(body) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
