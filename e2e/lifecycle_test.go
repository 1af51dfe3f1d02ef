package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestUpdateContainer checks that `crictl update` reaches the plugins'
// UpdateContainer and PostUpdateContainer, and that the new memory limit
// reaches the spec and the container's cgroup.
func TestUpdateContainer(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	differ := r.samplePlugin("differ", "05")
	logger := r.samplePlugin("logger", "10", "-events", "UpdateContainer,PostUpdateContainer")

	_, ctrID, _ := r.run(harness.NewPod("upd", "pod"), harness.NewContainer("app"))
	const limit = 268435456
	if _, err := r.cri.Run(r.ctx, "update", "--memory", strconv.Itoa(limit), ctrID); err != nil {
		t.Fatal(err)
	}
	wantLog(t, r.ctx, logger, "msg=UpdateContainer pod=upd/pod container=app")
	wantLog(t, r.ctx, logger, "msg=PostUpdateContainer pod=upd/pod container=app")
	evidence(t, "logger: %s", lineWith(logger.Log(), "msg=UpdateContainer"))

	info, err := r.cri.Inspect(r.ctx, ctrID)
	if err != nil {
		t.Fatal(err)
	}
	if m := info.Spec.Linux.Resources.Memory; m == nil || m.Limit == nil || *m.Limit != limit {
		t.Errorf("spec linux.resources.memory = %+v, want limit %d", m, limit)
	}
	got, err := harness.CgroupFile(info.Pid, "memory", "memory.limit_in_bytes")
	if err != nil || got != strconv.Itoa(limit) {
		t.Errorf("memory.limit_in_bytes of process %d = %q %v, want %d", info.Pid, got, err, limit)
	} else {
		evidence(t, "spec linux.resources.memory.limit=%d; cgroup memory.limit_in_bytes of pid %d = %s", limit, info.Pid, got)
	}
	// No plugin adjusts the container or the update here: the differ
	// must blame no plugin for containerd's own normalisation (issue 14
	// item 2), and says whose changes it reports on containerd.
	wantLog(t, r.ctx, differ, "PostUpdateContainer")
	log := differ.Log()
	for _, want := range []string{
		"reporting the changes of all plugins, at any index (" + nriRuntimeName() + " shows every plugin the container as it proposed it)",
		`msg="PostCreateContainer: no changes by plugins" container=upd/pod/app`,
		`msg="PostUpdateContainer: no changes by plugins" container=upd/pod/app`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("differ's log lacks %s", want)
		}
	}
	if strings.Contains(log, "plugins changed the container") {
		t.Errorf("differ blames plugins for %s's changes:\n%s", r.Kind(), log)
	}
	evidence(t, "differ: %s", lineWith(log, "PostUpdateContainer: no changes by plugins"))
	if l := lineWith(log, "memory.swap"); l != "" {
		evidence(t, "differ, under \"the runtime changed the container\": %s", l)
	}
	if t.Failed() {
		t.Logf("differ's log:\n%s", log)
	}
}

// TestSynchronize starts plugins after a pod and a container exist: they
// receive them in Synchronize, and adjust containers created afterwards.
func TestSynchronize(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	pod := harness.NewPod("sync", "pod")
	podID, _, before := r.run(pod, harness.NewContainer("before"))

	logger := r.samplePlugin("logger", "10")
	tmpl := r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)
	wantLog(t, r.ctx, logger, "msg=Synchronize pods=1 containers=1")
	wantLog(t, r.ctx, tmpl, "msg=synchronized pods=1 containers=1")
	evidence(t, "template: %s", lineWith(tmpl.Log(), "msg=synchronized"))
	evidence(t, "logger: %s", lineWith(logger.Log(), "msg=Synchronize"))
	if suite.nrikit {
		evidence(t, "%s: %s", r.Kind(), lastSynchronized(r.Log(), "60-template", false))
	} else {
		evidence(t, "%s: %s", r.Kind(), strings.TrimSpace(lineWith(r.Log(), "sending sync message, 1/1, 1/1")))
	}
	wantNoEnv(t, before, "NRI_TEMPLATE")

	id, err := r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer("after"))
	if err == nil {
		err = r.cri.StartContainer(r.ctx, id)
	}
	if err != nil {
		t.Fatal(err)
	}
	after, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv(t, after, "NRI_TEMPLATE", "injected-by-nri-template")
}

// TestRestart restarts containerd while plugins run. Pre-installed
// plugins are started again (the logger through a wrapper giving it
// -log-file, since containerd discards its stderr); every external
// plugin (the six sample plugins, the template and the JavaScript
// plugin, all with their default flags) reconnects by itself and keeps
// working; running containers survive.
func TestRestart(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	f := newFixtures(t, r)
	preLog := filepath.Join(r.Dir, "logs", "15-logger.log")
	r.preinstall("15-logger", filepath.Join(suite.bin, "logger"), []string{"-log-file", preLog}, false, "events: [CreateContainer]\n")
	r.preinstall("55-gpu-env", filepath.Join(suite.bin, "gpu-env"), nil, false, "env: {NRIKIT_PRE: relaunched}\n")
	r.start()
	r.waitPreinstalled(1, "15-logger", "55-gpu-env")

	ext := map[string]*harness.Process{
		"05-differ":          r.samplePlugin("differ", "05"),
		"10-logger":          r.samplePlugin("logger", "10"),
		"20-device-injector": r.samplePlugin("device-injector", "20", "-config", f.deviceFile),
		"30-hook-injector":   r.samplePlugin("hook-injector", "30", "-hooks-dir", f.hooksDir, "-config", f.hookFile),
		"40-ulimit-adjuster": r.samplePlugin("ulimit-adjuster", "40", "-config", f.ulimitFile),
		"50-gpu-env-ext":     r.samplePlugin("gpu-env", "50", "-name", "gpu-env-ext"),
		"60-template":        r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket),
	}
	if suite.node == "" {
		t.Error("node is not installed: the JavaScript plugin's reconnection is not checked")
	} else {
		script := filepath.Join(suite.repo, "plugins", "js-env", "plugin.js")
		ext["70-js-env"] = r.external("70-js-env", suite.node, script, "--socket", r.NRISocket, "--idx", "70")
	}
	pod := gpuPod(f)
	_, ctrID, old := r.run(pod, harness.NewContainer("work"))
	wantEnv(t, old, "NRIKIT_PRE", "relaunched")
	// containerd logs its own pid for pre-installed plugins (the peer of
	// the socket pair it made): find them as its children.
	prePids := preinstalledPids(r.Pid())
	if len(prePids) != 2 {
		t.Errorf("%s has %d pre-installed plugin processes, want 2: %v", r.Kind(), len(prePids), prePids)
	}

	start := time.Now()
	if err := r.Restart(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.waitPreinstalled(2, "15-logger", "55-gpu-env")
	// Every external plugin reconnects: containerd synchronizes it a
	// second time, and the process is the one started before.
	for _, name := range slices.Sorted(maps.Keys(ext)) {
		p := ext[name]
		r.waitExternal(p, name, 2)
		if done, code := p.Exited(); done {
			t.Errorf("external plugin %s exited with %d after the restart:\n%s", name, code, p.Log())
		}
	}
	evidence(t, "%s restarted; all %d external plugins reconnected within %s: %s", r.Kind(), len(ext),
		time.Since(start).Round(time.Millisecond), lastSynchronized(r.Log(), "50-gpu-env-ext", false))
	evidence(t, "50-gpu-env-ext: %s", lineWith(ext["50-gpu-env-ext"].Log(), "reconnected to runtime"))
	evidence(t, "60-template: %s", lineWith(ext["60-template"].Log(), "reconnected to runtime"))
	if p := ext["70-js-env"]; p != nil {
		evidence(t, "70-js-env: %s", lineWith(p.Log(), "reconnecting in"))
	}

	// Old plugin processes are gone: containerd shut its pre-installed
	// plugins down and started new ones.
	for _, pid := range prePids {
		err := harness.Eventually(r.ctx, 5*time.Second, func() error {
			if harness.Alive(pid) {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				return fmt.Errorf("pre-installed plugin (pid %d) survived %s's stop: %s", pid, r.Kind(), st)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	evidence(t, "pre-installed plugins before the restart %v are gone; after it they are %v", prePids, preinstalledPids(r.Pid()))
	// The container created before the restart still runs.
	info, err := r.cri.Inspect(r.ctx, ctrID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "CONTAINER_RUNNING" || info.Pid != old.Pid || !harness.Alive(old.Pid) {
		t.Errorf("container from before the restart: state %s pid %d (was %d)", info.State, info.Pid, old.Pid)
	}

	// A container created after the restart gets the adjustments of every
	// reconnected and relaunched plugin.
	pod2 := harness.NewPod("ml", "after-restart")
	pod2.Labels, pod2.Annotations = pod.Labels, pod.Annotations
	_, ctrID2, info2 := r.run(pod2, harness.NewContainer("work"))
	checkSampleAdjustments(t, f, ctrID2, info2)
	wantEnv(t, info2, "NVIDIA_VISIBLE_DEVICES", "void")
	wantEnv(t, info2, "NRIKIT_PRE", "relaunched")
	if ext["70-js-env"] != nil {
		wantEnv(t, info2, "JS_PLUGIN", "hello")
	}
	wantLog(t, r.ctx, ext["10-logger"], "msg=CreateContainer pod=ml/after-restart")
	wantLog(t, r.ctx, ext["05-differ"], `PostCreateContainer: plugins changed the container" container=ml/after-restart/work`)
	evidence(t, "reconnected 05-differ: %s", lineWith(ext["05-differ"].Log(), "container=ml/after-restart/work"))

	// The relaunched logger writes to its -log-file, every line with a
	// time, in a file created with mode 0640 at most.
	evidence(t, "relaunched 15-logger's -log-file: %s", wantFileLog(t, r.ctx, preLog, "msg=CreateContainer pod=ml/after-restart"))
	for _, l := range strings.Split(strings.TrimSpace(readFile(preLog)), "\n") {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("%s: line without a time: %q", preLog, l)
		}
	}
	if fi, err := os.Stat(preLog); err != nil || fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("%s: %v %v, want mode 0640 at most", preLog, fi, err)
	}
}

// preinstalledPids returns the running children of containerd (pid)
// that it launched as NRI plugins.
func preinstalledPids(pid int) []int {
	var pids []int
	for _, k := range harness.Children(pid) {
		if env, err := harness.Environ(k); err == nil && env["NRI_PLUGIN_SOCKET"] != "" && harness.Alive(k) {
			pids = append(pids, k)
		}
	}
	return pids
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
