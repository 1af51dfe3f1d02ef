package e2e

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// buildWASM builds the main package pkg of nrikit's module as a WASM
// plugin module (wasip1, c-shared, as docs/wasm-abi.md says) into dir and
// returns its path.
func buildWASM(t *testing.T, dir, pkg string) string {
	t.Helper()
	b := harness.GoBuild{Go: suite.goBin, Dir: suite.repo, Out: dir,
		Env:      []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"},
		Flags:    []string{"-buildmode=c-shared", "-trimpath"},
		Packages: []string{pkg}}
	if err := b.Run(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, filepath.Base(pkg))
}

// TestWASMPlugin: the template's WASM build (nrikit's stub/wasmguest),
// pre-installed in containerd's plugin directory as an executable
// module, adjusts a real container on upstream's NRI inside containerd
// as on nrikit's. On nrikit's it also loads the wasmhost test guest (its
// configuration file reaching it) and checks containment on the real
// runtime: a container whose name makes that guest loop forever is
// created within twice the request timeout, the guest is dropped by the
// default failure policy, and the next container still gets the
// template's adjustment.
func TestWASMPlugin(t *testing.T) {
	const timeout = 2 * time.Second
	out := t.TempDir()
	template := buildWASM(t, out, "./plugins/template")
	r := newRuntime(t, harness.Options{RequestTimeout: timeout})
	// copyFile installs it with mode 0755: upstream skips a module that
	// is not executable (nrikit loads it anyway, saying so).
	r.preinstall("10-template", template, nil, false, "greeting: from-conf\n")
	plugins := []string{"10-template"}
	if suite.nrikit {
		r.preinstall("20-guest", buildWASM(t, out, "./internal/wasmhost/testdata/guest"), nil, false, "from-conf")
		plugins = append(plugins, "20-guest")
	}
	start := time.Now()
	r.start()
	r.waitPreinstalled(1, plugins...)
	evidence(t, "%s started and synchronized %v in %s", r.Kind(), plugins, time.Since(start).Round(time.Millisecond))
	for _, p := range plugins {
		evidence(t, "%s module load: %s", p, wasmLoadTime(r.Log(), r.PluginDir, p))
	}

	pod := harness.NewPod("wasm", "app")
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	info := r.container(podID, pod, "adjust")
	wantEnv(t, info, "NRI_TEMPLATE", "injected-by-nri-template")
	if got := info.Spec.Annotations["template.nrikit.io/seen"]; got != "true" {
		t.Errorf("spec annotation template.nrikit.io/seen = %q, want true", got)
	}
	if !suite.nrikit {
		return
	}
	wantEnv(t, info, "WASM_GUEST", "configured=from-conf")
	// The guest's standard error (the template's slog output) is in the
	// runtime's log under the plugin's name.
	if line := logLine(r.Log(), "10-template", "msg=configured", " stream=stderr"); !strings.Contains(line, "from-conf") {
		t.Errorf("%s's log lacks the template's stderr with its configuration: %q", r.Kind(), line)
	} else {
		evidence(t, "%s: %s", r.Kind(), line)
	}

	// Containment: the guest loops forever for "loop".
	begin := time.Now()
	id, err := r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer("loop"))
	took := time.Since(begin)
	if err != nil {
		t.Fatalf("creating the container the guest loops on: %v", err)
	}
	if took > 2*timeout {
		t.Errorf("creating the container the guest loops on took %s, want at most twice the request timeout %s", took, timeout)
	}
	evidence(t, "container loop created in %s (request timeout %s)", took.Round(time.Millisecond), timeout)
	if err := r.cri.StartContainer(r.ctx, id); err != nil {
		t.Fatal(err)
	}
	looped, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv(t, looped, "NRI_TEMPLATE", "injected-by-nri-template")
	wantNoEnv(t, looped, "WASM_GUEST")
	if line := logLine(r.Log(), "20-guest", `msg="plugin timed out`); line == "" {
		t.Errorf("%s's log does not say that 20-guest timed out:\n%s", r.Kind(), r.LogTail(40))
	} else {
		evidence(t, "%s: %s", r.Kind(), line)
	}
	next := r.container(podID, pod, "after")
	wantEnv(t, next, "NRI_TEMPLATE", "injected-by-nri-template")
	wantNoEnv(t, next, "WASM_GUEST") // dropped by the default failure policy
}

// container creates and starts the container name in the pod podID and
// returns its inspection.
func (r *runtime) container(podID string, pod harness.PodConfig, name string) *harness.ContainerInfo {
	r.t.Helper()
	id, err := r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer(name))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.cri.StartContainer(r.ctx, id); err != nil {
		r.t.Fatal(err)
	}
	info, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	if info.State != "CONTAINER_RUNNING" || info.Pid <= 0 {
		r.t.Fatalf("container %s: state %s pid %d", name, info.State, info.Pid)
	}
	return info
}

// logLine returns the first line of containerd's log that holds every
// one of substrs and, unless plugin is empty, the field plugin=PLUGIN;
// "" if none does.
func logLine(log, plugin string, substrs ...string) string {
	for _, line := range strings.Split(log, "\n") {
		if plugin != "" && !slices.Contains(strings.Fields(line), "plugin="+plugin) {
			continue
		}
		if !slices.ContainsFunc(substrs, func(s string) bool { return !strings.Contains(line, s) }) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// wasmLoadTime says how long containerd took to load the WASM plugin
// idxName, from its log: nrikit logs the duration; upstream's is the time
// from its "Found WASM plugin" line to its "synchronizing plugin" line
// (compiling, instantiating and configuring the module).
func wasmLoadTime(log, pluginDir, idxName string) string {
	if suite.nrikit {
		line := logLine(log, idxName, `msg="loaded WASM plugin"`)
		for _, f := range strings.Fields(line) {
			if d, ok := strings.CutPrefix(f, "duration="); ok {
				return d + " (nrikit's duration field, no cache directory)"
			}
		}
		return "no load line"
	}
	found := logTime(logLine(log, "", "Found WASM plugin: "+filepath.Join(pluginDir, idxName)))
	synced := logTime(logLine(log, "", "synchronizing plugin "+idxName))
	if found.IsZero() || synced.IsZero() {
		return "no load lines"
	}
	return fmt.Sprintf("%s (upstream: Found WASM plugin to synchronizing plugin)", synced.Sub(found).Round(time.Millisecond))
}

// logTime is the time= field of one of containerd's log lines.
func logTime(line string) time.Time {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "time="); ok {
			t, _ := time.Parse(time.RFC3339Nano, strings.Trim(v, `"`))
			return t
		}
	}
	return time.Time{}
}
