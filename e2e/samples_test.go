package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/e2e/harness"
)

// fixtures are the host-side files the sample plugins' adjustments
// point at, and the configurations that allow gpuPod's requests.
type fixtures struct {
	hooksDir string // hook-injector's hooks.d
	hookOut  string // what the injected hook writes
	mountSrc string // device-injector's bind mount source

	deviceConf, ulimitConf, hookConf string // the configurations (device-injector, ulimit-adjuster and hook-injector allow nothing without)
	deviceFile, ulimitFile, hookFile string // the same in files, for -config
}

// newFixtures writes a CDI spec (device nrikit.dev/test=one), a hooks.d
// with one createRuntime hook for every container, and a directory to
// bind-mount with a marker file.
func newFixtures(t *testing.T, r *runtime) fixtures {
	t.Helper()
	f := fixtures{
		hooksDir: filepath.Join(r.Dir, "hooks.d"),
		hookOut:  filepath.Join(r.Dir, "hook-ran.log"),
		mountSrc: filepath.Join(r.Dir, "mount-src"),
	}
	f.deviceConf = fmt.Sprintf("namespaces: [ml]\ndevices: [{path: /dev/nrikit-null, type: c, major: 1, minor: 3}]\n"+
		"mounts: [{source: %s}]\ncdiDevices: [nrikit.dev/test=one]\n", f.mountSrc)
	f.ulimitConf = "namespaces: [ml]\nlimits: {nofile: 4096, memlock: 2097152}\n"
	f.hookConf = "hooks: [{path: /bin/sh, stages: [createRuntime]}]\n"
	f.deviceFile = filepath.Join(r.Dir, "device-injector.yaml")
	f.ulimitFile = filepath.Join(r.Dir, "ulimit-adjuster.yaml")
	f.hookFile = filepath.Join(r.Dir, "hook-injector.yaml")
	cdi := `{"cdiVersion": "0.6.0", "kind": "nrikit.dev/test", "devices": [{"name": "one", "containerEdits": {
  "env": ["NRIKIT_CDI=one"],
  "deviceNodes": [{"path": "/dev/nrikit-cdi", "hostPath": "/dev/zero"}]}}]}`
	hook := fmt.Sprintf(`{"version": "1.0.0", "hook": {"path": "/bin/sh", "args": ["sh", "-c", "cat >> %s; echo >> %s"]},
  "when": {"always": true}, "stages": ["createRuntime"]}`, f.hookOut, f.hookOut)
	for path, data := range map[string]string{
		filepath.Join(r.CDIDir, "nrikit.json"):       cdi,
		filepath.Join(f.hooksDir, "nrikit-e2e.json"): hook,
		filepath.Join(f.mountSrc, "marker"):          "mounted-by-device-injector\n",
		f.deviceFile:                                 f.deviceConf,
		f.ulimitFile:                                 f.ulimitConf,
		f.hookFile:                                   f.hookConf,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// gpuPod is a pod in scope of gpu-env (label accel=gpu) whose
// annotations ask device-injector and ulimit-adjuster for a device, a
// bind mount, a CDI device and an open-files limit for container work.
func gpuPod(f fixtures) harness.PodConfig {
	pod := harness.NewPod("ml", "trainer")
	pod.Labels = map[string]string{"accel": "gpu"}
	pod.Annotations = map[string]string{
		"devices.noderesource.dev/container.work":     "- {path: /dev/nrikit-null, type: c, major: 1, minor: 3, file_mode: 0o666}\n",
		"mounts.noderesource.dev/container.work":      fmt.Sprintf("- {source: %s, destination: /mnt/nrikit, type: bind, options: [bind, ro]}\n", f.mountSrc),
		"cdi-devices.noderesource.dev/container.work": "- nrikit.dev/test=one\n",
		"ulimits.noderesource.dev/container.work":     "- {type: RLIMIT_NOFILE, soft: 1024, hard: 4096}\n- {type: memlock, soft: 1048576, hard: 2097152}\n",
	}
	return pod
}

// checkSampleAdjustments checks the adjustments of device-injector,
// hook-injector, ulimit-adjuster and template on the gpu pod's work
// container, in the spec and in the process.
func checkSampleAdjustments(t *testing.T, f fixtures, ctrID string, info *harness.ContainerInfo) {
	t.Helper()
	s, pid := info.Spec, info.Pid

	// template: env and annotation.
	wantEnv(t, info, "NRI_TEMPLATE", "injected-by-nri-template")
	if got := s.Annotations["template.nrikit.io/seen"]; got != "true" {
		t.Errorf("spec annotation template.nrikit.io/seen = %q, want true", got)
	} else {
		evidence(t, "spec annotations has template.nrikit.io/seen=true")
	}

	// device-injector: device node.
	var dev *specs.LinuxDevice
	for i := range s.Linux.Devices {
		if s.Linux.Devices[i].Path == "/dev/nrikit-null" {
			dev = &s.Linux.Devices[i]
		}
	}
	if dev == nil || dev.Type != "c" || dev.Major != 1 || dev.Minor != 3 {
		t.Errorf("spec linux.devices /dev/nrikit-null = %+v, want c 1:3", dev)
	}
	if node, err := harness.Device(pid, "/dev/nrikit-null"); err != nil || !node.Char || node.Major != 1 || node.Minor != 3 {
		t.Errorf("/proc/%d/root/dev/nrikit-null: %v %v, want c 1:3", pid, node, err)
	} else {
		evidence(t, "spec linux.devices has /dev/nrikit-null c 1:3; /proc/%d/root/dev/nrikit-null is %s", pid, node)
	}

	// device-injector: bind mount.
	if i := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/mnt/nrikit" }); i < 0 || s.Mounts[i].Source != f.mountSrc {
		t.Errorf("spec mounts lack /mnt/nrikit from %s: %+v", f.mountSrc, s.Mounts)
	}
	line, err := harness.MountLine(pid, "/mnt/nrikit")
	marker, rerr := harness.ReadFile(pid, "/mnt/nrikit/marker")
	if err != nil || rerr != nil || string(marker) != "mounted-by-device-injector\n" {
		t.Errorf("mount /mnt/nrikit in process %d: %v, %v, marker %q", pid, err, rerr, marker)
	} else {
		evidence(t, "/proc/%d/mountinfo: %s", pid, line)
	}

	// device-injector: CDI device, resolved by containerd's CDI injector.
	wantEnv(t, info, "NRIKIT_CDI", "one")
	if node, err := harness.Device(pid, "/dev/nrikit-cdi"); err != nil || !node.Char || node.Major != 1 || node.Minor != 5 {
		t.Errorf("/proc/%d/root/dev/nrikit-cdi: %v %v, want c 1:5 (host /dev/zero)", pid, node, err)
	} else {
		evidence(t, "CDI nrikit.dev/test=one: /proc/%d/root/dev/nrikit-cdi is %s", pid, node)
	}

	// ulimit-adjuster. The workload is a Go program, and Go raises its own
	// soft open-files limit at start, so the process shows NOFILE's hard
	// limit and both limits of MEMLOCK (below this machine's 8 MiB hard
	// limit: above it runc fails to start the container).
	rlimit := func(typ string) *specs.POSIXRlimit {
		for i := range s.Process.Rlimits {
			if s.Process.Rlimits[i].Type == typ {
				return &s.Process.Rlimits[i]
			}
		}
		return nil
	}
	if rl := rlimit("RLIMIT_NOFILE"); rl == nil || rl.Soft != 1024 || rl.Hard != 4096 {
		t.Errorf("spec process.rlimits RLIMIT_NOFILE = %+v, want 1024/4096", rl)
	}
	if rl := rlimit("RLIMIT_MEMLOCK"); rl == nil || rl.Soft != 1<<20 || rl.Hard != 2<<20 {
		t.Errorf("spec process.rlimits RLIMIT_MEMLOCK = %+v, want 1048576/2097152", rl)
	}
	nofile, err := harness.Limits(pid, "Max open files")
	if err != nil || !strings.HasSuffix(nofile, " 4096 files") {
		t.Errorf("/proc/%d/limits: %q %v, want hard limit 4096", pid, nofile, err)
	}
	if l, err := harness.Limits(pid, "Max locked memory"); err != nil || l != "Max locked memory 1048576 2097152 bytes" {
		t.Errorf("/proc/%d/limits: %q %v", pid, l, err)
	} else {
		evidence(t, "spec RLIMIT_NOFILE 1024/4096, RLIMIT_MEMLOCK 1048576/2097152; /proc/%d/limits: %s; %s", pid, nofile, l)
	}

	// hook-injector: the hook is in the spec and runc ran it.
	if s.Hooks == nil || len(s.Hooks.CreateRuntime) != 1 || s.Hooks.CreateRuntime[0].Path != "/bin/sh" {
		t.Errorf("spec hooks.createRuntime = %+v, want the /bin/sh hook", s.Hooks)
	}
	b, err := os.ReadFile(f.hookOut)
	if err != nil || !strings.Contains(string(b), ctrID) {
		t.Errorf("hook output %s lacks container %s: %v %q", f.hookOut, ctrID, err, b)
	} else {
		evidence(t, "spec hooks.createRuntime[0].path=/bin/sh; runc ran it with the state of %s", ctrID[:12])
	}
}

// TestExternalSamplePlugins runs every sample plugin and the template
// as external plugins (`nri plugin NAME -socket ...`) on containerd.
func TestExternalSamplePlugins(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	f := newFixtures(t, r)

	differ := r.samplePlugin("differ", "05")
	logger := r.samplePlugin("logger", "10")
	r.samplePlugin("device-injector", "20", "-config", f.deviceFile)
	r.samplePlugin("hook-injector", "30", "-hooks-dir", f.hooksDir, "-config", f.hookFile)
	r.samplePlugin("ulimit-adjuster", "40", "-config", f.ulimitFile)
	r.samplePlugin("gpu-env", "50")
	r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)

	_, ctrID, info := r.run(gpuPod(f), harness.NewContainer("work"))
	checkSampleAdjustments(t, f, ctrID, info)
	wantEnv(t, info, "NVIDIA_VISIBLE_DEVICES", "void") // gpu-env's default: no GPU unless allowed
	wantEnv(t, info, "NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
	wantLog(t, r.ctx, logger, "msg=CreateContainer pod=ml/trainer")
	wantLog(t, r.ctx, differ, "plugins changed the container")
	evidence(t, "logger: %s", lineWith(logger.Log(), "msg=CreateContainer pod=ml/trainer"))
	evidence(t, "differ: %s", lineWith(differ.Log(), "plugins changed the container"))
	t.Logf("differ's report on %s (issue 14 item 2):\n%s", r.Kind(), differ.Log())

	// gpu-env's scope (accel=gpu), enforced by the plugin itself since
	// containerd sends every event: a CPU pod gets no GPU variables.
	_, _, plain := r.run(harness.NewPod("web", "frontend"), harness.NewContainer("nginx"))
	wantNoEnv(t, plain, "NVIDIA_VISIBLE_DEVICES")
	wantEnv(t, plain, "NRI_TEMPLATE", "injected-by-nri-template")
	evidence(t, "out-of-scope pod web/frontend: no NVIDIA_VISIBLE_DEVICES in spec or /proc/%d/environ", plain.Pid)
}

// TestPreinstalledSamplePlugins runs every sample plugin and the
// template as pre-installed plugins: containerd starts them from its
// plugin directory and sends each its configuration file. Those whose
// output the test reads run through a wrapper script that keeps their
// stderr, which containerd discards.
func TestPreinstalledSamplePlugins(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	f := newFixtures(t, r)
	bin := func(name string) string { return filepath.Join(suite.bin, name) }
	differLog := r.preinstall("05-differ", bin("differ"), nil, true, "")
	loggerLog := r.preinstall("10-logger", bin("logger"), nil, true, "events: [CreateContainer, StartContainer]\n")
	r.preinstall("20-device-injector", bin("device-injector"), nil, false, f.deviceConf)
	r.preinstall("30-hook-injector", bin("hook-injector"), nil, false, "hooksDirs: ["+f.hooksDir+"]\n"+f.hookConf)
	r.preinstall("40-ulimit-adjuster", bin("ulimit-adjuster"), nil, false, f.ulimitConf)
	r.preinstall("50-gpu-env", bin("gpu-env"), nil, false, "env: {NVIDIA_VISIBLE_DEVICES: \"3\", NRIKIT_GPU_CONF: from-conf}\nvisibleDevices: [\"3\"]\n")
	templateLog := r.preinstall("60-template", bin("template"), nil, true, "greeting: from-conf\n")
	r.start()
	r.waitPreinstalled(1, "05-differ", "10-logger", "20-device-injector", "30-hook-injector", "40-ulimit-adjuster", "50-gpu-env", "60-template")
	evidence(t, "%s: %s", r.Kind(), lastSynchronized(r.Log(), "50-gpu-env", true))

	_, ctrID, info := r.run(gpuPod(f), harness.NewContainer("work"))
	checkSampleAdjustments(t, f, ctrID, info)
	// gpu-env's configuration file replaced its default variables.
	wantEnv(t, info, "NVIDIA_VISIBLE_DEVICES", "3")
	wantEnv(t, info, "NRIKIT_GPU_CONF", "from-conf")
	wantNoEnv(t, info, "NVIDIA_DRIVER_CAPABILITIES")

	// logger's configuration file limited its events.
	line := wantFileLog(t, r.ctx, loggerLog, "msg=StartContainer pod=ml/trainer")
	evidence(t, "10-logger (events from its .conf): %s", line)
	if b, _ := os.ReadFile(loggerLog); strings.Contains(string(b), "msg=RunPodSandbox") {
		t.Errorf("logger configured for CreateContainer,StartContainer logged RunPodSandbox:\n%s", b)
	}
	evidence(t, "05-differ: %s", wantFileLog(t, r.ctx, differLog, "PostCreateContainer: plugins changed the container"))
	evidence(t, "60-template: %s", wantFileLog(t, r.ctx, templateLog, "greeting: from-conf"))
}

// TestUpstreamStubPlugin runs a plugin built with upstream's
// containerd/nri v0.12.5 stub (the interop module's upstreamplugin, in
// its env mode) alongside nrikit's template on containerd.
func TestUpstreamStubPlugin(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	record := filepath.Join(r.Dir, "upstream.record")
	r.external("45-upstream", filepath.Join(suite.bin, "upstreamplugin"), "-mode", "env", "-socket", r.NRISocket,
		"-idx", "45", "-name", "upstream", "-record", record)
	r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)

	_, _, info := r.run(harness.NewPod("interop", "pod"), harness.NewContainer("app"))
	wantEnv(t, info, "INTEROP_PLUGIN", "upstream-or-nrikit-stub")
	wantEnv(t, info, "NRI_TEMPLATE", "injected-by-nri-template")
	evidence(t, "%s: %s", r.Kind(), lastSynchronized(r.Log(), "45-upstream", false))
}
