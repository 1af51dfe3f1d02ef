package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/e2e/harness"
)

// TestConflict makes two plugins set the same environment variable:
// containerd refuses the container and names both plugins.
func TestConflict(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	r.samplePlugin("gpu-env", "50", "-all", "-env", "NRI_TEMPLATE=from-gpu-env")
	r.external("60-template", filepath.Join(suite.bin, "template"), "-idx", "60", "-socket", r.NRISocket)

	pod := harness.NewPod("conflict", "pod")
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer("app"))
	var ce *harness.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("creating a container both plugins adjust: %v, want a refusal", err)
	}
	msg := errorText(err)
	for _, want := range []string{"50-gpu-env", "60-template", "NRI_TEMPLATE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflict error lacks %q: %s", want, msg)
		}
	}
	evidence(t, "crictl create: %s", rpcDesc(msg))
}

// TestDefaultValidatorRejection enables containerd's default validator
// with reject_oci_hook_adjustment: a container hook-injector adds a hook
// to is refused, one it leaves alone is created.
func TestDefaultValidatorRejection(t *testing.T) {
	r := newRuntime(t, harness.Options{DefaultValidator: &harness.Validator{RejectOCIHooks: true}})
	r.start()
	hooks := filepath.Join(r.Dir, "hooks-annotated.d")
	writeFile(t, filepath.Join(hooks, "only-annotated.json"), `{"version": "1.0.0",
  "hook": {"path": "/bin/true"}, "when": {"annotations": {"^e2e\\.nrikit\\.dev/hook$": "^yes$"}}, "stages": ["createRuntime"]}`)
	allowed := filepath.Join(r.Dir, "hook-injector.yaml") // hook-injector injects no hook its configuration does not list
	writeFile(t, allowed, "hooks: [{path: /bin/true, stages: [createRuntime]}]\n")
	r.samplePlugin("hook-injector", "30", "-hooks-dir", hooks, "-config", allowed)

	pod := harness.NewPod("validated", "pod")
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	hooked := harness.NewContainer("hooked")
	hooked.Annotations = map[string]string{"e2e.nrikit.dev/hook": "yes"}
	_, err = r.cri.CreateContainer(r.ctx, podID, pod, hooked)
	if err == nil {
		t.Fatal("a container with an injected OCI hook was created despite reject_oci_hook_adjustment")
	}
	msg := errorText(err)
	if !strings.Contains(msg, "hook") || !strings.Contains(msg, "30-hook-injector") {
		t.Errorf("rejection does not name the hooks or the plugin: %s", msg)
	}
	evidence(t, "crictl create: %s", rpcDesc(msg))

	plain := harness.NewContainer("plain")
	id, err := r.cri.CreateContainer(r.ctx, podID, pod, plain)
	if err != nil {
		t.Fatalf("a container without hooks was refused too: %v", err)
	}
	info, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Spec.Hooks != nil && len(info.Spec.Hooks.CreateRuntime) > 0 {
		t.Errorf("plain container has hooks: %+v", info.Spec.Hooks)
	}
}

// TestTwoGPUEnvInstances runs two gpu-env instances with their own
// variables (-env) on a pod whose annotation picks its visible devices.
// The visible-devices annotation overrides NVIDIA_VISIBLE_DEVICES only
// in the instance that sets it (gpu-a), so the two no longer conflict
// over it (issue 14 item 5): the container is created with both
// instances' variables and the annotation's devices.
func TestTwoGPUEnvInstances(t *testing.T) {
	r := newRuntime(t, harness.Options{})
	r.start()
	conf := filepath.Join(r.Dir, "gpu-a.yaml") // the annotation's device, allowed
	if err := os.WriteFile(conf, []byte("visibleDevices: [\"0\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.samplePlugin("gpu-env", "50", "-name", "gpu-a", "-env", "NRIKIT_GPU_A=1", "-env", "NVIDIA_VISIBLE_DEVICES=none", "-config", conf)
	r.samplePlugin("gpu-env", "51", "-name", "gpu-b", "-env", "NRIKIT_GPU_B=1")
	pod := harness.NewPod("ml", "two-gpu-env")
	pod.Labels = map[string]string{"accel": "gpu"}
	pod.Annotations = map[string]string{"gpu-env.nrikit.dev/visible-devices/pod": "0"}
	podID, err := r.cri.RunPod(r.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.cri.CreateContainer(r.ctx, podID, pod, harness.NewContainer("app"))
	if err != nil {
		t.Fatalf("two gpu-env instances conflict: crictl create: %s", rpcDesc(errorText(err)))
	}
	if err := r.cri.StartContainer(r.ctx, id); err != nil {
		t.Fatal(err)
	}
	info, err := r.cri.Inspect(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantEnv(t, info, "NRIKIT_GPU_A", "1")
	wantEnv(t, info, "NRIKIT_GPU_B", "1")
	wantEnv(t, info, "NVIDIA_VISIBLE_DEVICES", "0")
	if strings.Contains(r.Log(), "both tried to set") {
		t.Errorf("%s logged a conflict:\n%s", r.Kind(), lineWith(r.Log(), "both tried to set"))
	}
	evidence(t, "gpu-a and gpu-b on one container, no conflict: NRIKIT_GPU_A=1 NRIKIT_GPU_B=1 NVIDIA_VISIBLE_DEVICES=0 (annotation, via gpu-a) in spec and /proc/%d/environ", info.Pid)
}
