package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// impostorNS is the namespace of the impostor DaemonSet of identityEnforced.
const impostorNS = "e2e-impostor"

// gpuEnvIdentity is the identity the shipped policy binds gpu-env's grant
// to: its DaemonSet's pods.
const gpuEnvIdentity = "{namespaces: [kube-system], podLabelSelector: app.kubernetes.io/name=nri-plugin-gpu-env, containerNames: [plugin]}"

// identityEnforced (issue 37): containerd derives the gpu-env plugin's
// identity from its connection (its DaemonSet pod and container, through
// its cgroup and containerd's own container list) and the shipped policy
// binds gpu-env's grant to it. The gpu-env overlay deployed in another
// namespace, a DaemonSet whose pod registers as 50-gpu-env too, is refused
// with both identities in containerd's log, and the real plugin's grant
// still applies to a GPU pod. With a required entry bound to the same
// identity, the impostor registering under another index is refused by
// that entry, and pods that need gpu-env still run with the real one.
func identityEnforced(t *testing.T, n *node) {
	// gpu-env's configuration as the overlay ships it (policyEnforced
	// widened it beyond its grant).
	n.kubectl("apply", "-k", filepath.Join(env.repo, "deploy", "kustomize", "overlays", "gpu-env"))
	n.kubectl("-n", pluginNS, "rollout", "status", "daemonset/"+pluginDS, "--timeout=180s")
	real := n.readyPod(pluginNS, pluginSelector, 2*time.Minute)
	reg := n.waitContainerdLine("the plugin's registration", `msg="plugin registering"`, "plugin=50-gpu-env", "pod=kube-system/"+real.Metadata.Name)
	evidence(t, "gpu-env's DaemonSet pod %s/%s registered: containerd: %s", pluginNS, real.Metadata.Name, reg)

	// The same overlay in another namespace: its pods register as
	// 50-gpu-env, from another pod.
	tree := filepath.Join(t.TempDir(), "kustomize")
	if err := copyTree(filepath.Join(env.repo, "deploy", "kustomize"), tree); err != nil {
		t.Fatal(err)
	}
	impostor := filepath.Join(tree, "overlays", "impostor")
	// Without the priority class, which the real DaemonSet's namespace
	// has, and with the JSON patch ops given.
	kustomization := func(ops string) {
		t.Helper()
		if err := os.MkdirAll(impostor, 0o755); err != nil {
			t.Fatal(err)
		}
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../gpu-env]\nnamespace: " + impostorNS + "\n" +
			"patches:\n  - target: {kind: DaemonSet}\n    patch: |-\n      - op: remove\n        path: /spec/template/spec/priorityClassName\n" + ops
		if err := os.WriteFile(filepath.Join(impostor, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
		n.kubectl("apply", "-k", impostor)
	}
	n.kubectl("create", "namespace", impostorNS)
	defer n.kubectl("delete", "namespace", impostorNS, "--wait=true", "--timeout=120s")
	kustomization("")
	refused := n.waitContainerdLine("the impostor's refusal", "may not replace it", "50-gpu-env",
		"pod=kube-system/"+real.Metadata.Name, "pod="+impostorNS+"/")
	evidence(t, "kubectl apply -k of the gpu-env overlay in namespace %s: containerd: %s", impostorNS, refused)

	n.apply(policyPod("identity-allowed", true))
	allowed := n.readyPod(appNS, "app=identity-allowed", 2*time.Minute)
	info := n.container(allowed)
	for key, want := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"} {
		if err := checkEnv(info, key, want); err != nil {
			t.Errorf("pod %s, with the impostor refused: %v", allowed.Metadata.Name, err)
		}
	}
	evidence(t, "the real plugin's grant still applies: pod %s/%s (requires gpu-env) pid %d has NVIDIA_VISIBLE_DEVICES=void, NVIDIA_DRIVER_CAPABILITIES=compute,utility (spec, /proc/%d/environ)",
		appNS, allowed.Metadata.Name, info.Pid, info.Pid)

	// gpu-env required, with its DaemonSet's identity; the impostor
	// under index 51.
	shipped, err := os.ReadFile(shippedPolicy())
	if err != nil {
		t.Fatal(err)
	}
	n.reloadPolicy(string(shipped) + "required:\n  - plugin: gpu-env\n    identity: " + gpuEnvIdentity + "\n")
	defer n.reloadPolicy(string(shipped))
	kustomization(`      - op: replace
        path: /spec/template/spec/containers/0/env/0
        value: {name: NRI_PLUGIN_INDEX, value: "51"}
`)
	bound := n.waitContainerdLine("the refusal under index 51", "the policy binds this name to another identity", "51-gpu-env",
		"required[0] gpu-env takes identity", "pod="+impostorNS+"/")
	evidence(t, "the impostor as 51-gpu-env, gpu-env required with its DaemonSet's identity: containerd: %s", bound)
	n.apply(policyPod("identity-required", false))
	p := n.readyPod(appNS, "app=identity-required", 2*time.Minute)
	evidence(t, "with gpu-env required: pod %s/%s created (the real plugin counts, the impostor does not)", appNS, p.Metadata.Name)
	n.kubectl("-n", appNS, "delete", "pods", "identity-allowed", "identity-required", "--wait=true", "--timeout=120s")
}

// waitContainerdLine waits until a line of containerd's log holds every
// one of wants, and returns it.
func (n *node) waitContainerdLine(what string, wants ...string) string {
	n.t.Helper()
	line, err := harness.WaitLine(n.ctx, 2*time.Minute, n.Containerd.Log, wants...)
	if err != nil {
		n.t.Fatalf("containerd's log, %s: %v\n%s", what, err, n.Containerd.LogTail(30))
	}
	return line
}
