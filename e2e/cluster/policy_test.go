package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// beyondGrant is the variable the widened gpu-env configuration sets: a
// library every process of the container would load, which the node
// policy's gpu-env grant (NVIDIA_VISIBLE_DEVICES and
// NVIDIA_DRIVER_CAPABILITIES only) does not allow.
const beyondGrant = "LD_PRELOAD"

// shippedPolicy is the path of the node policy shipped for the samples,
// which the cluster's containerd reads (newNode).
func shippedPolicy() string {
	return filepath.Join(env.repo, "deploy", "policy", "policy.yaml")
}

// policyEnforced: the node runs under the shipped policy
// (deploy/policy/policy.yaml, installed where containerd on nrikit reads
// it). gpu-env's answers within its grant land (spec and /proc); with its
// ConfigMap widened to set LD_PRELOAD, each of its answers is refused
// whole, as docs/policy.md says: a pod requiring gpu-env is not created
// (the kubelet's event gives the policy's reason), a GPU pod that does not
// require it is created without any of gpu-env's changes, and
// containerd's log names the plugin, the field, the value and the rule.
// The policy file rewritten with the variable in gpu-env's grant is read
// again by the running containerd, and the same answer then lands.
func policyEnforced(t *testing.T, n *node) {
	loaded := lineWith(n.Containerd.Log(), `msg="policy loaded"`)
	if !strings.Contains(loaded, n.Containerd.PolicyPath()) {
		t.Fatalf("containerd's log has no policy loaded from %s: %q", n.Containerd.PolicyPath(), loaded)
	}
	evidence(t, "node policy %s installed as %s; containerd: %s", "deploy/policy/policy.yaml", n.Containerd.PolicyPath(), loaded)

	// (i) An answer within the grant lands.
	n.apply(policyPod("policy-allowed", true))
	allowed := n.readyPod(appNS, "app=policy-allowed", 2*time.Minute)
	info := n.container(allowed)
	for _, key := range []string{"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"} {
		if err := checkEnv(info, key, map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility,video"}[key]); err != nil {
			t.Fatalf("pod %s, under the policy: %v", allowed.Metadata.Name, err)
		}
	}
	evidence(t, "within the grant: pod %s/%s (requires gpu-env) pid %d: spec process.env and /proc/%d/environ have NVIDIA_VISIBLE_DEVICES=void, NVIDIA_DRIVER_CAPABILITIES=compute,utility,video",
		appNS, allowed.Metadata.Name, info.Pid, info.Pid)

	// (ii) The configuration widened beyond the grant, as an operator
	// (or whoever can edit the ConfigMap) would.
	const anchor = "\n  NVIDIA_DRIVER_CAPABILITIES: compute,utility\n"
	widened := "\n  NVIDIA_DRIVER_CAPABILITIES: compute,utility\n  " + beyondGrant + ": /opt/nrikit-e2e/preload.so\n"
	r := n.editGPUEnvConfig(anchor, widened)
	before, after, cm := r.before, r.after, r.newCM
	if after.Metadata.Name == before.Metadata.Name || !strings.Contains(n.kubectl("-n", pluginNS, "get", "configmap", cm, "-o", "jsonpath={.data.config\\.yaml}"), beyondGrant) {
		t.Fatalf("plugin pod %s -> %s, ConfigMap %s: want a new pod with %s in its configuration", before.Metadata.Name, after.Metadata.Name, cm, beyondGrant)
	}
	evidence(t, "gpu-env's ConfigMap widened (%s sets %s=/opt/nrikit-e2e/preload.so): plugin pod %s -> %s Ready", cm, beyondGrant, before.Metadata.Name, after.Metadata.Name)
	denials := strings.Count(n.Containerd.Log(), "denied by the policy")

	n.apply(policyPod("policy-refused", true))
	msg := n.eventWith(appNS, "policy-refused", "denied by the policy", "app=policy-refused")
	for _, want := range []string{"50-gpu-env", beyondGrant, "policy.yaml:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal event does not name %q: %s", want, msg)
		}
	}
	state := n.kubectl("-n", appNS, "get", "pod", "policy-refused", "-o", `jsonpath={.status.containerStatuses[0].state}`)
	if strings.Contains(state, "running") {
		t.Errorf("pod policy-refused container state %s, want no container", state)
	}
	evidence(t, "beyond the grant: pod %s/policy-refused (requires gpu-env) not created (container state %s); kubelet event %s", appNS, state, msg)

	n.apply(policyPod("policy-dropped", false))
	dropped := n.readyPod(appNS, "app=policy-dropped", 2*time.Minute)
	dinfo := n.container(dropped)
	for _, key := range []string{beyondGrant, "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"} {
		if _, _, inSpec, inProc, err := envOf(dinfo, key); err != nil || inSpec || inProc {
			t.Errorf("pod %s has %s (spec %v, /proc %v, %v): want none of gpu-env's refused answer", dropped.Metadata.Name, key, inSpec, inProc, err)
		}
	}
	evidence(t, "beyond the grant: pod %s/%s (does not require gpu-env) created, pid %d, without %s, NVIDIA_VISIBLE_DEVICES or NVIDIA_DRIVER_CAPABILITIES (spec, /proc/%d/environ): the whole answer dropped",
		appNS, dropped.Metadata.Name, dinfo.Pid, beyondGrant, dinfo.Pid)

	var line string
	err := harness.Eventually(n.ctx, 30*time.Second, func() error {
		log := n.Containerd.Log()
		if strings.Count(log, "denied by the policy") <= denials {
			return fmt.Errorf("no new denial in containerd's log")
		}
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, `msg="plugin's changes denied by the policy"`) && strings.Contains(l, "50-gpu-env") &&
				strings.Contains(l, beyondGrant) && strings.Contains(l, "policy-dropped") {
				line = strings.TrimSpace(l)
				return nil
			}
		}
		return fmt.Errorf("containerd's log has no denial of gpu-env's answer for policy-dropped naming %s", beyondGrant)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.Containerd.LogTail(20))
	}
	evidence(t, "containerd: %s", line)

	// (iii) The policy widened while containerd runs: read again within
	// its reload interval, it lets the same answer through; then the
	// shipped policy is put back.
	shipped, err := os.ReadFile(shippedPolicy())
	if err != nil {
		t.Fatal(err)
	}
	const grant = "env: [NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES]"
	if !strings.Contains(string(shipped), grant) {
		t.Fatalf("deploy/policy/policy.yaml has no %q", grant)
	}
	start := time.Now()
	n.reloadPolicy(strings.Replace(string(shipped), grant, "env: [NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, "+beyondGrant+"]", 1))
	reloaded := time.Since(start)
	n.apply(policyPod("policy-widened", true))
	widenedPod := n.readyPod(appNS, "app=policy-widened", 2*time.Minute)
	winfo := n.container(widenedPod)
	if err := checkEnv(winfo, beyondGrant, "/opt/nrikit-e2e/preload.so"); err != nil {
		t.Fatalf("pod %s under the widened policy: %v", widenedPod.Metadata.Name, err)
	}
	evidence(t, "policy file rewritten with %s in gpu-env's grant, reloaded by containerd in %s: pod %s/%s (requires gpu-env) created, pid %d, spec and /proc/%d/environ have %s=/opt/nrikit-e2e/preload.so",
		beyondGrant, reloaded.Round(time.Millisecond), appNS, widenedPod.Metadata.Name, winfo.Pid, winfo.Pid, beyondGrant)
	n.reloadPolicy(string(shipped))
	n.kubectl("-n", appNS, "delete", "pods", "policy-allowed", "policy-refused", "policy-dropped", "policy-widened", "--wait=true", "--timeout=120s")
}

// reloadPolicy replaces the node's policy file with data (renamed into
// place) and waits until containerd has read it again.
func (n *node) reloadPolicy(data string) {
	n.t.Helper()
	before := strings.Count(n.Containerd.Log(), `msg="policy reloaded"`)
	path := n.Containerd.PolicyPath()
	if err := os.WriteFile(path+".new", []byte(data), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		n.t.Fatal(err)
	}
	// containerd looks at the file every 10 seconds.
	if err := n.Containerd.WaitLog(n.ctx, time.Minute, `msg="policy reloaded"`, before+1); err != nil {
		n.t.Fatalf("%v\n%s", err, n.Containerd.LogTail(20))
	}
}

// policyPod is the manifest of a GPU pod of gpu-env's namespace labelled
// app=NAME, requiring gpu-env if required.
func policyPod(name string, required bool) string {
	ann := ""
	if required {
		ann = `  annotations: {required-plugins.noderesource.dev: "[gpu-env]"}` + "\n"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: %[2]s
  labels: {accel: gpu, app: %[1]s}
%[3]sspec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
    - name: app
      image: %[4]s
      imagePullPolicy: Never
`, name, appNS, ann, harness.WorkloadImage)
}
