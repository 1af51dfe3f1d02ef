package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/e2e/harness"
)

// live holds the clusters not closed yet, for cleaning up on SIGINT or
// SIGTERM.
var live sync.Map

// node is one test's cluster with its context.
type node struct {
	*harness.Cluster
	t   *testing.T
	ctx context.Context
}

// newNode starts a cluster for t and registers its cleanup: on failure
// the components' log tails are printed. containerd's default validator
// is enabled (with no plugin required node-wide), so that a pod naming
// a plugin in the annotation required-plugins.noderesource.dev is not
// created without it; the node's policy is the shipped
// deploy/policy/policy.yaml, as deploy/README.md asks to install it.
func newNode(t *testing.T, ctx context.Context) *node {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	policy, err := os.ReadFile(shippedPolicy())
	if err != nil {
		t.Fatalf("the shipped node policy: %v", err)
	}
	start := time.Now()
	c, err := harness.StartCluster(ctx, harness.ClusterOptions{
		Tools: env.tools, Kube: env.kube, ImageTar: env.imageTar,
		ExtraImageTars:   []string{env.plugin[pluginTags[0]], env.plugin[pluginTags[1]], env.loggerTar, env.recorderTar},
		DefaultValidator: &harness.Validator{},
		Policy:           string(policy),
	})
	if err != nil {
		t.Fatal(err)
	}
	live.Store(c, true)
	t.Cleanup(func() {
		defer live.Delete(c)
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.Logs(40))
		}
		if err := c.Close(context.Background(), os.Getenv("NRIKIT_E2E_KEEP") != ""); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	version, _ := c.Kubectl(ctx, "get", "node", harness.NodeName, "-o", "jsonpath={.status.nodeInfo.kubeletVersion} {.status.nodeInfo.containerRuntimeVersion}")
	t.Logf("EVIDENCE %s: node %s Ready %s after start (kubelet, runtime: %s)", t.Name(), harness.NodeName,
		time.Since(start).Round(time.Millisecond), version)
	return &node{Cluster: c, t: t, ctx: ctx}
}

// kubectl runs kubectl and returns its output, failing the test on error.
func (n *node) kubectl(args ...string) string {
	n.t.Helper()
	out, err := n.Kubectl(n.ctx, args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// apply applies the manifests in yaml.
func (n *node) apply(yaml string) {
	n.t.Helper()
	f, err := os.CreateTemp(n.Dir, "manifest-*.yaml")
	if err != nil {
		n.t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(yaml); err != nil {
		n.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		n.t.Fatal(err)
	}
	n.kubectl("apply", "-f", f.Name())
}

// pod is what the tests read of a pod.
type pod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Name        string `json:"name"`
			Ready       bool   `json:"ready"`
			Image       string `json:"image"`
			ImageID     string `json:"imageID"`
			ContainerID string `json:"containerID"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

// ready reports whether the pod's Ready condition is True.
func (p *pod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// pods lists the pods of namespace ns matching selector.
func (n *node) pods(ns, selector string) ([]pod, error) {
	out, err := n.Kubectl(n.ctx, "-n", ns, "get", "pods", "-l", selector, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("decoding the pod list: %w", err)
	}
	return list.Items, nil
}

// readyPod waits until exactly one pod of ns matches selector and is
// Ready, and returns it.
func (n *node) readyPod(ns, selector string, timeout time.Duration) pod {
	n.t.Helper()
	var got pod
	err := harness.Eventually(n.ctx, timeout, func() error {
		pods, err := n.pods(ns, selector)
		if err != nil {
			return err
		}
		var ready []pod
		for _, p := range pods {
			if p.ready() {
				ready = append(ready, p)
			}
		}
		if len(ready) != 1 || len(pods) != 1 {
			return fmt.Errorf("%d pods %s in %s, %d of them Ready; want one, Ready", len(pods), selector, ns, len(ready))
		}
		got = ready[0]
		return nil
	})
	if err != nil {
		n.t.Fatalf("%v\n%s", err, n.describe(ns, selector))
	}
	return got
}

// describe returns `kubectl describe pods` of the selected pods, for a
// failure's message.
func (n *node) describe(ns, selector string) string {
	out, err := n.Kubectl(n.ctx, "-n", ns, "describe", "pods", "-l", selector)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// container inspects the pod's first container through CRI.
func (n *node) container(p pod) *harness.ContainerInfo {
	n.t.Helper()
	if len(p.Status.ContainerStatuses) == 0 {
		n.t.Fatalf("pod %s has no container status", p.Metadata.Name)
	}
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	info, err := n.Containerd.CRI().Inspect(n.ctx, id)
	if err != nil {
		n.t.Fatal(err)
	}
	if info.State != "CONTAINER_RUNNING" || info.Pid <= 0 {
		n.t.Fatalf("pod %s container %s: state %s pid %d", p.Metadata.Name, id, info.State, info.Pid)
	}
	return info
}

// envOf returns key's value in the container's spec and in its process's
// /proc/PID/environ, and whether each has it.
func envOf(info *harness.ContainerInfo, key string) (spec, proc string, inSpec, inProc bool, err error) {
	spec, inSpec = specEnv(info.Spec, key)
	environ, err := harness.Environ(info.Pid)
	if err != nil {
		return "", "", false, false, err
	}
	proc, inProc = environ[key]
	return spec, proc, inSpec, inProc, nil
}

// checkEnv checks key=value in the container's spec and its process's
// environment.
func checkEnv(info *harness.ContainerInfo, key, value string) error {
	spec, proc, inSpec, inProc, err := envOf(info, key)
	if err != nil {
		return err
	}
	if !inSpec || spec != value || !inProc || proc != value {
		return fmt.Errorf("%s: spec %q (present %v), /proc/%d/environ %q (present %v); want %q in both",
			key, spec, inSpec, info.Pid, proc, inProc, value)
	}
	return nil
}

// specEnv returns the value of key in the spec's process environment.
func specEnv(s *specs.Spec, key string) (string, bool) {
	if s == nil || s.Process == nil {
		return "", false
	}
	for _, kv := range s.Process.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// evidence logs one line of key evidence, collected for the issue's
// closing note (`go test -v | grep EVIDENCE`).
func evidence(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("EVIDENCE %s: %s", t.Name(), fmt.Sprintf(format, args...))
}

// workloadPod is the manifest of a GPU pod (accel=gpu, in the namespace
// gpu-env serves) that requires the gpu-env plugin: containerd's default
// validator refuses to create its container while gpu-env is not
// registered, and the kubelet retries.
func workloadPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: gpu-workloads
  labels: {accel: gpu, app: roll}
  annotations: {required-plugins.noderesource.dev: "[gpu-env]"}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
    - name: app
      image: %s
      imagePullPolicy: Never
`, name, harness.WorkloadImage)
}

// copyTree copies the regular files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return errors.New("not a regular file: " + path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// noPods waits until no pod of ns matches selector (a DaemonSet or a
// release deleted).
func (n *node) noPods(ns, selector string, timeout time.Duration) {
	n.t.Helper()
	err := harness.Eventually(n.ctx, timeout, func() error {
		pods, err := n.pods(ns, selector)
		if err != nil {
			return err
		}
		if len(pods) > 0 {
			return fmt.Errorf("%d pods %s left in %s", len(pods), selector, ns)
		}
		return nil
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

// eventWith waits for an event about the object name in ns whose line
// ("REASON: MESSAGE") contains substr and returns that line; describe
// selects the pods described if none comes.
func (n *node) eventWith(ns, name, substr, describe string) string {
	n.t.Helper()
	var line string
	err := harness.Eventually(n.ctx, 2*time.Minute, func() error {
		out, err := n.Kubectl(n.ctx, "-n", ns, "get", "events", "--field-selector", "involvedObject.name="+name,
			"-o", `jsonpath={range .items[*]}{.reason}{": "}{.message}{"\n"}{end}`)
		if err != nil {
			return err
		}
		if line = lineWith(string(out), substr); line == "" {
			return fmt.Errorf("no event about %s with %q yet: %s", name, substr, out)
		}
		return nil
	})
	if err != nil {
		n.t.Fatalf("%v\n%s", err, n.describe(ns, describe))
	}
	return line
}

// rolledConfig is what editGPUEnvConfig saw: the plugin pod and the
// ConfigMap before and after the edit.
type rolledConfig struct {
	before, after pod
	oldCM, newCM  string
}

// editGPUEnvConfig edits gpu-env's configuration as an operator edits a
// copy of deploy/kustomize: old replaced by edited in the overlay's
// config.yaml, applied, the DaemonSet rolled and its new pod Ready.
func (n *node) editGPUEnvConfig(old, edited string) rolledConfig {
	n.t.Helper()
	var r rolledConfig
	r.before = n.readyPod(pluginNS, pluginSelector, time.Minute)
	r.oldCM = n.gpuEnvConfigMap()
	tree := filepath.Join(n.t.TempDir(), "kustomize")
	if err := copyTree(filepath.Join(env.repo, "deploy", "kustomize"), tree); err != nil {
		n.t.Fatal(err)
	}
	conf := filepath.Join(tree, "overlays", "gpu-env", "config.yaml")
	b, err := os.ReadFile(conf)
	if err != nil {
		n.t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		n.t.Fatalf("%s has no %q:\n%s", conf, old, b)
	}
	if err := os.WriteFile(conf, []byte(strings.Replace(string(b), old, edited, 1)), 0o644); err != nil {
		n.t.Fatal(err)
	}
	n.kubectl("apply", "-k", filepath.Join(tree, "overlays", "gpu-env"))
	n.kubectl("-n", pluginNS, "rollout", "status", "daemonset/"+pluginDS, "--timeout=180s")
	r.after = n.readyPod(pluginNS, pluginSelector, 2*time.Minute)
	r.newCM = n.gpuEnvConfigMap()
	return r
}

// gpuEnvConfigMap returns the name of the ConfigMap gpu-env's DaemonSet
// mounts.
func (n *node) gpuEnvConfigMap() string {
	return n.kubectl("-n", pluginNS, "get", "daemonset", pluginDS, "-o", "jsonpath={.spec.template.spec.volumes[?(@.name=='config')].configMap.name}")
}
