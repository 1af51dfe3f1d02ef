package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The tests of this file check issue 37's identities inside the runtime
// (NRIKIT_E2E_RUNTIME=nrikit): the runtime derives an external plugin's
// identity from its connection (credentials, executable, and through its
// cgroup and the runtime's own container list, its pod and container),
// binds the shipped policy's grants to the samples' DaemonSet pods, and
// refuses a plugin that registers under another's name, or under a
// required plugin's name, without its identity.

// daemonSetPod is the pod of the DaemonSet of deploy/kustomize/overlays/NAME
// on a node: kube-system, labelled as the overlay labels its pod template.
func daemonSetPod(name string) harness.PodConfig {
	pod := harness.NewPod("kube-system", "nri-plugin-"+name+"-x7k2p")
	pod.Labels = map[string]string{"app.kubernetes.io/name": "nri-plugin-" + name}
	return pod
}

// pluginContainer returns the plugin container of the overlay NAME as the
// kubelet runs it (manifestContainer), with this runtime's socket
// directory in place of /var/run/nri, and its image tarball to start the
// runtime with. A config other than "" replaces the overlay's
// configuration file.
func pluginContainer(ctx context.Context, t *testing.T, name, config string) (harness.ContainerConfig, string) {
	t.Helper()
	dir := t.TempDir()
	image := pluginImage(ctx, t, dir, name)
	ctr := manifestContainer(ctx, t, name, filepath.Join(dir, "volumes"))
	for _, m := range ctr.Mounts {
		if m.ContainerPath == "/etc/nri-plugin" && config != "" {
			writeFile(t, filepath.Join(m.HostPath, "config.yaml"), config)
		}
	}
	ctr.LogPath = "plugin.log"
	return ctr, image
}

// runPlugin starts ctr, a plugin container, in pod, with args appended
// to its command line, mounting the runtime's socket directory where the
// DaemonSet mounts /var/run/nri. It does not wait for the container to
// run: a refused plugin exits.
func (r *runtime) runPlugin(pod harness.PodConfig, ctr harness.ContainerConfig, args ...string) (ctrID string) {
	r.t.Helper()
	ctr.Args = append(append([]string(nil), ctr.Args...), args...)
	ctr.Mounts = append([]harness.Mount(nil), ctr.Mounts...)
	for i, m := range ctr.Mounts {
		if m.HostPath == "/var/run/nri" {
			ctr.Mounts[i].HostPath = filepath.Dir(r.NRISocket)
		}
	}
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		r.t.Fatal(err)
	}
	if ctrID, err = r.cri.CreateContainer(r.ctx, podID, pod, ctr); err != nil {
		r.t.Fatal(err)
	}
	if err := r.cri.StartContainer(r.ctx, ctrID); err != nil {
		r.t.Fatal(err)
	}
	return ctrID
}

// waitLogLine waits until a line of the runtime's log holds every one of
// wants, and returns it.
func (r *runtime) waitLogLine(what string, wants ...string) string {
	r.t.Helper()
	line, err := harness.WaitLine(r.ctx, time.Minute, r.Log, wants...)
	if err != nil {
		r.t.Fatalf("%s's log, %s: %v\n%s", r.Kind(), what, err, lineWith(r.Log(), "plugin registration failed"))
	}
	return line
}

// digestOf returns "sha256:HEX" of the file at path.
func digestOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestTrustIdentity: under the shipped policy, the template's DaemonSet pod
// (the overlay's container, kube-system, its label) registers with the
// identity the runtime derives (its pod and container, from its cgroup and
// the runtime's list) and gets its grant. The same image in another pod,
// registering under the template's name, is refused with both identities
// in the runtime's log, and the real template's grant still applies;
// registering under the hook-injector's name, it is refused by the
// hook-injector's grant. Before issue 37 the impostor replaced the
// template, and under the hook-injector's name got its grant.
func TestTrustIdentity(t *testing.T) {
	requireTrust(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctr, image := pluginContainer(ctx, t, "template", "")
	r := newRuntime(t, harness.Options{ExtraImageTars: []string{image}})
	_, data := shippedPolicy(t)
	r.writePolicy(data)
	r.start()

	real := daemonSetPod("template")
	r.runPlugin(real, ctr)
	reg := r.waitLogLine("the template's registration", `msg="plugin registering"`, "plugin=60-template", "pod=kube-system/"+real.Metadata.Name)
	if err := harness.Eventually(r.ctx, time.Minute, func() error {
		if synchronized(r.Log(), "60-template", false) == 0 {
			return fmt.Errorf("the template's pod has not synchronized")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	evidence(t, "the template's DaemonSet pod: %s: %s", r.Kind(), reg)
	_, _, before := r.run(harness.NewPod("default", "app-before"), harness.NewContainer("app"))
	wantEnv(t, before, "NRI_TEMPLATE", "injected-by-nri-template")

	// The same image, another pod, the template's name and index (its
	// metrics off: the pods share the node's network, and the real
	// plugin serves :9090).
	impostor := harness.NewPod("default", "impostor")
	impostor.Labels = map[string]string{"app": "impostor"}
	r.runPlugin(impostor, ctr, "-metrics-addr=")
	refused := r.waitLogLine("the impostor's refusal", "may not replace it", "60-template",
		"pod=kube-system/"+real.Metadata.Name, "pod=default/impostor")
	evidence(t, "a pod registering as the template: %s: %s", r.Kind(), refused)
	_, _, after := r.run(harness.NewPod("default", "app-after"), harness.NewContainer("app"))
	wantEnv(t, after, "NRI_TEMPLATE", "injected-by-nri-template")
	evidence(t, "after the impostor, container app-after (pid %d) has NRI_TEMPLATE from the real template's grant", after.Pid)

	// Under another sample's name: the policy binds it to that sample's
	// DaemonSet.
	hooks := harness.NewPod("default", "impostor-hooks")
	hooks.Labels = map[string]string{"app": "impostor"}
	r.runPlugin(hooks, ctr, "-metrics-addr=", "-name", "hook-injector", "-idx", "30")
	bound := r.waitLogLine("the refusal under the hook-injector's name", "the policy binds this name to another identity", "30-hook-injector",
		"app.kubernetes.io/name=nri-plugin-hook-injector", "pod=default/impostor-hooks")
	evidence(t, "a pod registering as the hook-injector: %s: %s", r.Kind(), bound)
}

// TestTrustRequiredIdentity: a required plugin bound to its executable
// counts only as that program. Another program registering under its name
// is refused (before issue 37 it satisfied the requirement) and pods are
// still refused; the real one lets them run.
func TestTrustRequiredIdentity(t *testing.T) {
	requireTrust(t)
	r := newRuntime(t, harness.Options{})
	nri := filepath.Join(suite.bin, "nri")
	r.writePolicy(fmt.Sprintf("version: 1\nrequired:\n  - plugin: e2e-required\n    identity: {uids: [0], executables: [%q]}\n", digestOf(t, nri)))
	r.start()
	runp := func(name string) error {
		_, err := r.cri.RunPod(r.ctx, harness.NewPod("trust", name))
		return err
	}
	if err := runp("before"); err == nil || !strings.Contains(rpcDesc(errorText(err)), "e2e-required") {
		t.Fatalf("a pod was created without the required plugin: %v", err)
	}
	// Another program (the template's binary) under the required name.
	r.startExternal("55-e2e-required", filepath.Join(suite.bin, "template"), "-idx", "55", "-name", "e2e-required", "-socket", r.NRISocket)
	refused := r.waitLogLine("the impostor's refusal", "the policy binds this name to another identity", "55-e2e-required", "required[0] e2e-required")
	err := runp("impostor")
	if err == nil || !strings.Contains(rpcDesc(errorText(err)), "e2e-required") {
		t.Fatalf("with the impostor: crictl runp: %v", err)
	}
	evidence(t, "another program registering as the required e2e-required: %s: %s; crictl runp: %s", r.Kind(), refused, rpcDesc(errorText(err)))
	r.samplePlugin("logger", "55", "-name", "e2e-required")
	if err := runp("real"); err != nil {
		t.Fatalf("with the required plugin connected: crictl runp: %s", rpcDesc(errorText(err)))
	}
	evidence(t, "the required plugin (nri plugin logger): %s", r.waitLogLine("its registration", `msg="plugin registering"`, "plugin=55-e2e-required", digestOf(t, nri)))
}
