package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The tests of this file check the trust model of issue 25 inside the
// runtime (NRIKIT_E2E_RUNTIME=nrikit): per-plugin grants from the node's
// policy file, enforced on each plugin's answer; capabilities told to
// plugins; required plugins gating pods; the policy reloaded while the
// runtime runs. compat/nri reads the policy from policy.yaml in the
// parent of NRI's plugin configuration directory (/etc/nri/policy.yaml
// beside /etc/nri/conf.d; here the runtime's own directory). Upstream's
// NRI has no policy: the tests are skipped there.

// requireTrust skips t unless the runtime runs on nrikit, whose runtime
// library enforces the policy.
func requireTrust(t *testing.T) {
	t.Helper()
	if !suite.nrikit {
		t.Skipf("%s runs upstream's NRI, which has no plugin grants, capabilities or required plugins at RunPodSandbox (issue 25); %s=nrikit runs this test", runtimeKind(), runtimeEnv)
	}
}

// writePolicy replaces the runtime's policy file with data as an
// administrator's tools do: a new file (mode 0644, owned by root) renamed
// over the old one.
func (r *runtime) writePolicy(data string) {
	r.t.Helper()
	tmp := r.PolicyPath() + ".new"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, r.PolicyPath()); err != nil {
		r.t.Fatal(err)
	}
}

// shippedPolicy returns the node policy shipped for the sample plugins.
func shippedPolicy(t *testing.T) (path, data string) {
	t.Helper()
	path = filepath.Join(suite.repo, "deploy", "policy", "policy.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the shipped node policy: %v", err)
	}
	return path, string(b)
}

// deniedLine returns the first line of the runtime's log that reports a
// refusal by the policy ("denied") of plugin's answer and holds every one
// of wants, or "".
func deniedLine(log, plugin string, wants ...string) string {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "denied") || !strings.Contains(line, plugin) {
			continue
		}
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(line, w) }) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// waitDenied waits until the runtime's log reports the refusal of
// plugin's answer with every one of wants, and returns the line.
func (r *runtime) waitDenied(plugin string, wants ...string) string {
	r.t.Helper()
	var line string
	err := harness.Eventually(r.ctx, 10*time.Second, func() error {
		if line = deniedLine(r.Log(), plugin, wants...); line == "" {
			return fmt.Errorf("%s's log has no line reporting that the policy denied %s's answer with %q", r.Kind(), plugin, wants)
		}
		return nil
	})
	if err != nil {
		r.t.Error(err)
	}
	return line
}

// createAndStart creates ctr in the pod podID and starts it, failing the
// test on error.
func (r *runtime) createAndStart(podID string, pod harness.PodConfig, ctr harness.ContainerConfig) *harness.ContainerInfo {
	r.t.Helper()
	id, err := r.cri.CreateContainer(r.ctx, podID, pod, ctr)
	if err != nil {
		r.t.Fatalf("crictl create %s: %s", ctr.Metadata.Name, rpcDesc(errorText(err)))
	}
	if err := r.cri.StartContainer(r.ctx, id); err != nil {
		r.t.Fatal(err)
	}
	info, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		r.t.Fatal(err)
	}
	return info
}

// grantPolicy lets the gpu-env instances set NVIDIA_* variables only, and
// the template its variable and annotation. The plugins run by hand on the
// host, as any process that reaches the socket: identity: any.
const grantPolicy = `version: 1
grants:
  - plugins: [gpu-ok, gpu-beyond, gpu-strict]
    identity: any
    adjust:
      env: ["NVIDIA_*"]
  - plugins: [template]
    identity: any
    adjust:
      env: [NRI_TEMPLATE]
      annotations: [template.nrikit.io/seen]
`

// TestTrustGrantRefusal: a plugin whose answer changes a field beyond its
// grant is refused, with the plugin, the field, the value and the
// container in the runtime's log, and its failure policy applies: by
// default the container is created without any of that plugin's changes
// (the others' are applied); with fail_request (the plugin's
// -fail-request: containerd has no per-plugin override, so the plugin's
// own failure policy is the one that applies) the creation fails with the
// reason.
func TestTrustGrantRefusal(t *testing.T) {
	requireTrust(t)
	r := newRuntime(t, harness.Options{})
	r.writePolicy(grantPolicy)
	r.start()
	r.samplePlugin("gpu-env", "50", "-all", "-name", "gpu-ok") // its default NVIDIA_* variables: within its grant
	r.samplePlugin("gpu-env", "51", "-all", "-name", "gpu-beyond", "-env", "NVIDIA_E2E_BEYOND=1", "-env", "NRIKIT_E2E_BEYOND=1")
	r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)

	pod := harness.NewPod("trust", "grants")
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	info := r.createAndStart(podID, pod, harness.NewContainer("beyond"))
	// gpu-beyond's answer is refused whole: the variable its grant allows
	// is not applied either.
	wantNoEnv(t, info, "NRIKIT_E2E_BEYOND")
	wantNoEnv(t, info, "NVIDIA_E2E_BEYOND")
	// The other plugins' answers, within their grants, are.
	wantEnv(t, info, "NVIDIA_VISIBLE_DEVICES", "void")
	wantEnv(t, info, "NRI_TEMPLATE", "injected-by-nri-template")
	line := r.waitDenied("51-gpu-beyond", "env", "NRIKIT_E2E_BEYOND", "beyond")
	evidence(t, "default failure policy: container beyond created without gpu-beyond's NRIKIT_E2E_BEYOND and NVIDIA_E2E_BEYOND (spec, /proc/%d/environ), with gpu-ok's and the template's changes; %s: %s", info.Pid, r.Kind(), line)
	if strings.Contains(line, "NVIDIA_E2E_BEYOND") {
		t.Errorf("the refusal names the variable the grant allows: %s", line)
	}

	// The same refusal under fail_request fails the creation.
	r.samplePlugin("gpu-env", "52", "-all", "-name", "gpu-strict", "-fail-request", "-env", "NRIKIT_E2E_STRICT=1")
	_, err = r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer("strict"))
	if err == nil {
		t.Fatal("a container was created although gpu-strict, with fail_request, answered beyond its grant")
	}
	msg := rpcDesc(errorText(err))
	for _, want := range []string{"52-gpu-strict", "env", "NRIKIT_E2E_STRICT", "strict", "denied"} {
		if !strings.Contains(msg, want) {
			t.Errorf("crictl create's error lacks %q: %s", want, msg)
		}
	}
	evidence(t, "fail_request: crictl create: %s", msg)
	evidence(t, "fail_request: %s: %s", r.Kind(), r.waitDenied("52-gpu-strict", "env", "NRIKIT_E2E_STRICT", "strict"))
}

// The host-root attack of issue 25: a pod's annotations ask the
// device-injector for the node's root file system, read-write, and its
// disk.
const (
	attackMount  = "- {source: /, destination: /host, type: bind, options: [rbind, rw]}\n"
	attackDevice = "- {path: /dev/sda, type: b, major: 8, minor: 0}\n"
	// wideOpen is a device-injector configuration that allows the
	// attack: the plugin's own allowlist is not what refuses it below.
	wideOpen = "mounts: [{source: /, readWrite: true}]\ndevices: [{path: \"/dev/*\", type: b, major: 8}]\n"
)

// attack runs the attacker's pod, in the namespace the shipped policy
// lets the device-injector serve, and returns its container; the
// device-injector runs, with the wide-open configuration, by hand.
func (r *runtime) attack() *harness.ContainerInfo {
	r.t.Helper()
	conf := filepath.Join(r.Dir, "device-injector.yaml")
	writeFile(r.t, conf, wideOpen)
	r.samplePlugin("device-injector", "10", "-config", conf)
	return r.attackPod()
}

// attackPod runs the attacker's pod and returns its container.
func (r *runtime) attackPod() *harness.ContainerInfo {
	r.t.Helper()
	pod := harness.NewPod("gpu-workloads", "attacker")
	pod.Annotations = map[string]string{
		"mounts.noderesource.dev/container.main":  attackMount,
		"devices.noderesource.dev/container.main": attackDevice,
	}
	_, _, info := r.run(pod, harness.NewContainer("main"))
	return info
}

// hostMount returns the spec's mount at /host, or nil.
func hostMount(s *specs.Spec) *specs.Mount {
	if i := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/host" }); i >= 0 {
		return &s.Mounts[i]
	}
	return nil
}

// hasDevice reports whether the spec gives the container the node path.
func hasDevice(s *specs.Spec, path string) bool {
	return s.Linux != nil && slices.ContainsFunc(s.Linux.Devices, func(d specs.LinuxDevice) bool { return d.Path == path })
}

// TestTrustHostRootAttack: the device-injector, configured to allow
// anything, gives the attacker's container the node's root file system
// read-write without a policy (so this test can fail), and the shipped
// node policy refuses it.
func TestTrustHostRootAttack(t *testing.T) {
	requireTrust(t)
	t.Run("without a policy", func(t *testing.T) {
		r := newRuntime(t, harness.Options{})
		r.start()
		// A file on the host that the container must not be able to reach.
		marker := filepath.Join(r.Dir, "host-secret")
		writeFile(t, marker, "the node's own file\n")
		info := r.attack()
		m := hostMount(info.Spec)
		if m == nil || m.Source != "/" {
			t.Fatalf("without a policy the attack did not reach the spec (mounts %+v): the test cannot tell a refusal from a failure", info.Spec.Mounts)
		}
		got, err := harness.ReadFile(info.Pid, filepath.Join("/host", marker))
		if err != nil || string(got) != "the node's own file\n" {
			t.Fatalf("the container does not see the host's files through /host: %q %v", got, err)
		}
		if !hasDevice(info.Spec, "/dev/sda") {
			t.Errorf("spec linux.devices lacks /dev/sda: %+v", info.Spec.Linux.Devices)
		}
		line, _ := harness.MountLine(info.Pid, "/host")
		evidence(t, "no policy: spec mount /host from %s %v, /dev/sda in linux.devices; the container reads the host's %s through /proc/%d/root/host; mountinfo: %s",
			m.Source, m.Options, marker, info.Pid, line)
	})
	t.Run("under the shipped policy", func(t *testing.T) {
		// The device-injector as its DaemonSet's pod, which the shipped
		// policy's grant binds (docs/policy.md, Identity), with the
		// wide-open configuration.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ctr, image := pluginContainer(ctx, t, "device-injector", wideOpen)
		r := newRuntime(t, harness.Options{ExtraImageTars: []string{image}})
		path, data := shippedPolicy(t)
		r.writePolicy(data)
		r.start()
		r.runPlugin(daemonSetPod("device-injector"), ctr)
		if err := harness.Eventually(r.ctx, time.Minute, func() error {
			if synchronized(r.Log(), "20-device-injector", false) == 0 {
				return fmt.Errorf("the device-injector's pod has not synchronized")
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\n%s", err, lineWith(r.Log(), "plugin registration failed"))
		}
		info := r.attackPod()
		if m := hostMount(info.Spec); m != nil {
			t.Errorf("under %s the container has /host from %s: %+v", path, m.Source, m)
		}
		if _, err := harness.MountLine(info.Pid, "/host"); err == nil {
			t.Errorf("under %s /proc/%d/mountinfo has /host", path, info.Pid)
		}
		if hasDevice(info.Spec, "/dev/sda") {
			t.Errorf("under %s the container has /dev/sda", path)
		}
		line := r.waitDenied("20-device-injector", "mounts", "/host", "main", "gpu-workloads/attacker")
		evidence(t, "shipped policy %s: container main created without /host or /dev/sda (spec, /proc/%d/mountinfo); %s: %s",
			strings.TrimPrefix(path, suite.repo+"/"), info.Pid, r.Kind(), line)
	})
}

// toldCapabilities returns the template's log line about the
// capabilities the runtime told it (its capabilities=NAME,NAME,...
// field, docs/policy.md "Field names") and the names in it.
func toldCapabilities(t *testing.T, r *runtime, p *harness.Process) (string, map[string]bool) {
	t.Helper()
	if err := p.WaitLog(r.ctx, 10*time.Second, "capabilities=", 1); err != nil {
		t.Fatal(err)
	}
	line := lineWith(p.Log(), "capabilities=")
	names := map[string]bool{}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "capabilities="); ok {
			for _, n := range strings.Split(strings.Trim(v, `"`), ",") {
				names[n] = true
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("the template logged no capabilities=NAME,... field:\n%s", p.Log())
	}
	return line, names
}

// TestTrustCapabilities: the template logs the capabilities the runtime
// told it at Configure: what containerd applies, intersected with the
// template's grant under a policy.
func TestTrustCapabilities(t *testing.T) {
	requireTrust(t)
	start := func(t *testing.T, policy string) (*runtime, *harness.Process) {
		r := newRuntime(t, harness.Options{})
		if policy != "" {
			r.writePolicy(policy)
		}
		r.start()
		return r, r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)
	}
	t.Run("without a policy", func(t *testing.T) {
		r, p := start(t, "")
		line, names := toldCapabilities(t, r, p)
		for _, want := range []string{"env", "annotations", "mounts", "linux.devices", "hooks", "rlimits"} {
			if !names[want] {
				t.Errorf("the template was not told %s, which containerd applies: %s", want, line)
			}
		}
		evidence(t, "60-template: %s", line)
	})
	t.Run("under a policy", func(t *testing.T) {
		r, p := start(t, grantPolicy)
		line, names := toldCapabilities(t, r, p)
		for _, want := range []string{"env", "annotations"} {
			if !names[want] {
				t.Errorf("the template was not told %s, which its grant allows: %s", want, line)
			}
		}
		for _, not := range []string{"mounts", "linux.devices", "hooks", "rlimits", "cdi_devices"} {
			if names[not] {
				t.Errorf("the template was told %s, which its grant does not allow: %s", not, line)
			}
		}
		evidence(t, "60-template (grant: env, annotations): %s", line)
	})
}

// TestTrustRequiredPlugin: a required plugin that is absent fails the
// pod's creation (`crictl runp`) with its name, whether the policy
// requires it or the pod's annotation does; once it is there, or for a
// pod that does not ask, the pod runs.
func TestTrustRequiredPlugin(t *testing.T) {
	requireTrust(t)
	runp := func(r *runtime, pod harness.PodConfig, want string) {
		r.t.Helper()
		_, err := r.cri.RunPod(r.ctx, pod)
		if err == nil {
			r.t.Fatalf("pod %s/%s was created although the required plugin %s is absent", pod.Metadata.Namespace, pod.Metadata.Name, want)
		}
		msg := rpcDesc(errorText(err))
		if !strings.Contains(msg, want) {
			r.t.Errorf("crictl runp's error does not name the required plugin %s: %s", want, msg)
		}
		evidence(r.t, "crictl runp: %s", msg)
	}
	t.Run("by the policy", func(t *testing.T) {
		r := newRuntime(t, harness.Options{})
		r.writePolicy("version: 1\nrequired: [{plugin: e2e-required, identity: any}]\n")
		r.start()
		runp(r, harness.NewPod("trust", "needs-policy"), "e2e-required")
		// The required plugin (an observer) connects: pods run again.
		r.samplePlugin("logger", "55", "-name", "e2e-required")
		if _, err := r.cri.RunPod(r.ctx, harness.NewPod("trust", "after")); err != nil {
			t.Fatalf("with the required plugin connected: crictl runp: %s", rpcDesc(errorText(err)))
		}
	})
	t.Run("by the pod's annotation", func(t *testing.T) {
		r := newRuntime(t, harness.Options{})
		r.start()
		pod := harness.NewPod("trust", "needs-annotation")
		pod.Annotations = map[string]string{"required-plugins.noderesource.dev": `["e2e-wanted"]`}
		runp(r, pod, "e2e-wanted")
		if _, err := r.cri.RunPod(r.ctx, harness.NewPod("trust", "asks-nothing")); err != nil {
			t.Fatalf("a pod without the annotation: crictl runp: %s", rpcDesc(errorText(err)))
		}
	})
}

// TestTrustPolicyReload: the policy file rewritten while the runtime runs
// takes effect without a restart: a narrowed policy refuses a change the
// old one allowed; an invalid file then keeps the narrowed policy and is
// logged with its line.
func TestTrustPolicyReload(t *testing.T) {
	requireTrust(t)
	r := newRuntime(t, harness.Options{})
	r.writePolicy(grantPolicy)
	r.start()
	r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)
	pod := harness.NewPod("trust", "reload")
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv(t, r.createAndStart(podID, pod, harness.NewContainer("before")), "NRI_TEMPLATE", "injected-by-nri-template")

	// Narrowed: the template may set its annotation, no longer its variable.
	r.writePolicy("version: 1\ngrants:\n  - plugins: [template]\n    identity: any\n    adjust:\n      annotations: [template.nrikit.io/seen]\n")
	written := time.Now()
	// The reload is asynchronous: create containers until one is refused
	// the variable (bounded).
	const reloadBound = 60 * time.Second
	var name string
	for i := 0; ; i++ {
		name = fmt.Sprintf("after-%d", i)
		info := r.createAndStart(podID, pod, harness.NewContainer(name))
		if _, ok := specEnv(info.Spec, "NRI_TEMPLATE"); !ok {
			wantNoEnv(t, info, "NRI_TEMPLATE")
			break
		}
		if time.Since(written) > reloadBound {
			t.Fatalf("%s after the narrowed policy was written, containers still get NRI_TEMPLATE:\n%s", reloadBound, lineWith(r.Log(), "policy"))
		}
		select {
		case <-r.ctx.Done():
			t.Fatal(r.ctx.Err())
		case <-time.After(time.Second):
		}
	}
	took := time.Since(written).Round(100 * time.Millisecond)
	line := r.waitDenied("60-template", "env", "NRI_TEMPLATE", name)
	evidence(t, "narrowed policy in force within %s: container %s created without NRI_TEMPLATE; %s: %s", took, name, r.Kind(), line)

	// A typo (line 4) is logged with its line; the narrowed policy stays.
	r.writePolicy("version: 1\ngrants:\n  - plugins: [template]\n    ajust:\n      env: [NRI_TEMPLATE]\n")
	var bad string
	err = harness.Eventually(r.ctx, reloadBound, func() error {
		if bad = lineWith(r.Log(), "policy.yaml:4"); bad == "" {
			return fmt.Errorf("%s's log does not report the invalid policy file's line 4", r.Kind())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evidence(t, "invalid policy file: %s", bad)
	info := r.createAndStart(podID, pod, harness.NewContainer("after-typo"))
	wantNoEnv(t, info, "NRI_TEMPLATE")
	line = r.waitDenied("60-template", "env", "NRI_TEMPLATE", "after-typo")
	evidence(t, "after the invalid file the narrowed policy stays: container after-typo created without NRI_TEMPLATE; %s: %s", r.Kind(), line)
}
