package upstreamstub

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// TestUpstreamPluginWithNriServe runs `nri serve` (nrikit's runtime
// simulator, built from the main module) and an upstream-stub plugin as an
// external plugin connecting to its socket: the plugin registers and its
// adjustment appears in every container of the JSON report.
func TestUpstreamPluginWithNriServe(t *testing.T) {
	dir := t.TempDir()
	nri := buildNri(t, dir)
	socket := filepath.Join(dir, "nri.sock")
	var stdout bytes.Buffer
	var stderr lockedBuffer
	serve := exec.Command(nri, "serve", "--socket", socket,
		"--wait-plugins", "1", "--timeout", "60s", "--output", "json")
	serve.Stdout, serve.Stderr = &stdout, &stderr
	serve.Env = append(os.Environ(), testbin.NoRaceExitDelay)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	t.Cleanup(func() { _ = serve.Process.Kill() })

	deadline := time.Now().Add(30 * time.Second)
	for {
		// Wait for serve to say it listens rather than dialing: a
		// probing connection would count as a plugin that failed to
		// register.
		if strings.Contains(stderr.String(), "listening on") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nri serve did not listen on %s\n%s", socket, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	plugin := testbin.Start(t, pluginBin, "-mode", string(behavior.Env), "-socket", socket, "-name", "upstream-env", "-idx", "40")

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("nri serve: %v\nstderr:\n%s\nplugin:\n%s", err, stderr.String(), plugin.Output())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("nri serve did not finish\nstderr:\n%s", stderr.String())
	}
	var report struct {
		Plugins []struct {
			Name, Index, Kind string
			Calls             int
		} `json:"plugins"`
		Containers []struct {
			Pod, Name, State string
			Env              []string
		} `json:"containers"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("decoding the report: %v\n%s", err, stdout.String())
	}
	called := false
	for _, p := range report.Plugins {
		if p.Index == "40" && p.Name == "upstream-env" && p.Calls > 0 {
			called = true
		}
	}
	if !called {
		t.Fatalf("40-upstream-env is not in the report as called: %+v", report.Plugins)
	}
	want := behavior.EnvKey + "=" + behavior.EnvValue
	checked := 0
	for _, c := range report.Containers {
		if c.State == "failed" {
			continue
		}
		checked++
		if !slices.Contains(c.Env, want) {
			t.Errorf("container %s/%s lacks %s: %v", c.Pod, c.Name, want, c.Env)
		}
	}
	if checked == 0 {
		t.Fatal("no container was created")
	}
}

// buildNri builds the nri command in the main module (whose go.sum covers
// its dependencies) into dir.
func buildNri(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nri")
	args := []string{"build", "-o", bin}
	if testbin.Race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/nri")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nri: %v\n%s", err, out)
	}
	return bin
}

// lockedBuffer is a bytes.Buffer safe for a writing process and a
// reading test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
