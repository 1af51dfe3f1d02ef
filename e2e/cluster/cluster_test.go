package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The gpu-env overlay's DaemonSet, as deploy/kustomize/overlays/gpu-env
// names it.
const (
	pluginNS       = "kube-system"
	pluginDS       = "nri-plugin-gpu-env"
	pluginSelector = "app.kubernetes.io/name=nri-plugin-gpu-env"
	pluginImage    = "localhost/nrikit/gpu-env"
	appNS          = "gpu-workloads"
	appSelector    = "app=gpu-app"
)

// TestNode runs the scenarios of issue 28 in order on one node; each
// needs what the one before it left (a Ready plugin DaemonSet, the
// workload Deployment), so a failure stops the rest.
func TestNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	n := newNode(t, ctx)
	steps := []struct {
		name string
		run  func(*testing.T, *node)
	}{
		{"DaemonSetReady", daemonSetReady},
		{"WorkloadAdjusted", workloadAdjusted},
		{"ConfigMapEdited", configMapEdited},
		{"RolloutNewImage", rolloutNewImage},
		{"MetricsScraped", metricsScraped},
		{"PolicyEnforced", policyEnforced},
		{"IdentityEnforced", identityEnforced},
		{"DaemonSetDeleted", daemonSetDeleted},
		{"HelmInstalled", helmInstalled},
		{"HelmREADME", helmREADME},
	}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			s.run(t, &node{Cluster: n.Cluster, t: t, ctx: ctx})
		})
		if !ok {
			t.Fatalf("%s failed: the later scenarios need it", s.name)
		}
	}
}

// daemonSetReady: `kubectl apply -k deploy/kustomize/overlays/gpu-env`
// gives a plugin pod that turns Ready through its /readyz probe once the
// plugin has registered with containerd.
func daemonSetReady(t *testing.T, n *node) {
	overlay := filepath.Join(env.repo, "deploy", "kustomize", "overlays", "gpu-env")
	start := time.Now()
	n.kubectl("apply", "-k", overlay)
	n.kubectl("-n", pluginNS, "rollout", "status", "daemonset/"+pluginDS, "--timeout=180s")
	p := n.readyPod(pluginNS, pluginSelector, time.Minute)
	probe := n.kubectl("-n", pluginNS, "get", "daemonset", pluginDS, "-o",
		"jsonpath={.spec.template.spec.containers[0].readinessProbe.httpGet.path} {.spec.template.spec.containers[0].readinessProbe.httpGet.port}")
	if !strings.HasPrefix(probe, "/readyz ") {
		t.Errorf("readiness probe %q, want /readyz", probe)
	}
	cs := p.Status.ContainerStatuses[0]
	evidence(t, "kubectl apply -k %s: pod %s/%s Ready=true %s after apply (readinessProbe GET %s), image %s, IP %s",
		"deploy/kustomize/overlays/gpu-env", pluginNS, p.Metadata.Name, time.Since(start).Round(time.Millisecond), probe, cs.Image, p.Status.PodIP)
	if err := n.Containerd.WaitLog(n.ctx, 30*time.Second, "plugin=50-gpu-env", 1); err != nil {
		t.Error(err)
	}
	for _, l := range strings.Split(n.Containerd.Log(), "\n") {
		if strings.Contains(l, `msg="plugin synchronized"`) && strings.Contains(l, "plugin=50-gpu-env") {
			evidence(t, "containerd: %s", strings.TrimSpace(l))
			break
		}
	}
	info := n.container(p)
	evidence(t, "plugin container pid %d args %q uid %d readonly-root %v", info.Pid, info.Spec.Process.Args,
		info.Spec.Process.User.UID, info.Spec.Root.Readonly)
}

// workloadAdjusted: a Deployment's pod (a GPU pod of the namespace the
// shipped configuration serves) gets gpu-env's variables, in the spec
// containerd gave runc and in its process's environment.
func workloadAdjusted(t *testing.T, n *node) {
	n.apply(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-app, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: gpu-app}}
  template:
    metadata:
      labels: {app: gpu-app, accel: gpu}
      annotations: {required-plugins.noderesource.dev: "[gpu-env]"}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: %[2]s
          imagePullPolicy: Never
`, appNS, harness.WorkloadImage))
	n.kubectl("-n", appNS, "rollout", "status", "deployment/gpu-app", "--timeout=120s")
	p := n.readyPod(appNS, appSelector, time.Minute)
	info := n.container(p)
	for key, want := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"} {
		if err := checkEnv(info, key, want); err != nil {
			t.Errorf("pod %s: %v", p.Metadata.Name, err)
			continue
		}
		evidence(t, "Deployment pod %s/%s container pid %d: spec process.env and /proc/%d/environ have %s=%s",
			appNS, p.Metadata.Name, info.Pid, info.Pid, key, want)
	}
}

// configMapEdited: the configuration edited in the overlay's ConfigMap
// (a copy of deploy/kustomize, as an operator edits theirs) reaches the
// plugin: kustomize renames the ConfigMap, the DaemonSet rolls, and the
// next pod gets the edited value.
func configMapEdited(t *testing.T, n *node) {
	const old, edited = "NVIDIA_DRIVER_CAPABILITIES: compute,utility", "NVIDIA_DRIVER_CAPABILITIES: compute,utility,video"
	r := n.editGPUEnvConfig(old, edited)
	before, after, oldCM, newCM := r.before, r.after, r.oldCM, r.newCM
	if newCM == oldCM || after.Metadata.Name == before.Metadata.Name {
		t.Fatalf("ConfigMap %s -> %s, plugin pod %s -> %s: want both replaced", oldCM, newCM, before.Metadata.Name, after.Metadata.Name)
	}
	data := n.kubectl("-n", pluginNS, "get", "configmap", newCM, "-o", "jsonpath={.data.config\\.yaml}")
	if !strings.Contains(data, "compute,utility,video") {
		t.Fatalf("ConfigMap %s config.yaml:\n%s", newCM, data)
	}
	evidence(t, "ConfigMap %s -> %s (config.yaml: %s); plugin pod %s -> %s", oldCM, newCM, edited, before.Metadata.Name, after.Metadata.Name)

	n.kubectl("-n", appNS, "rollout", "restart", "deployment/gpu-app")
	n.kubectl("-n", appNS, "rollout", "status", "deployment/gpu-app", "--timeout=120s")
	p := n.readyPod(appNS, appSelector, 2*time.Minute)
	info := n.container(p)
	if err := checkEnv(info, "NVIDIA_DRIVER_CAPABILITIES", "compute,utility,video"); err != nil {
		t.Fatalf("pod %s after the edit: %v", p.Metadata.Name, err)
	}
	evidence(t, "restarted Deployment pod %s: spec and /proc/%d/environ have NVIDIA_DRIVER_CAPABILITIES=compute,utility,video",
		p.Metadata.Name, info.Pid)
}

// rolloutNewImage: `kubectl set image` rolls the DaemonSet to a new image
// of the plugin while a loop creates a GPU pod every second; every pod
// created during the rollout ends up running with the plugin's
// adjustments: those whose container creation came while no plugin was
// registered were refused by containerd's default validator (the pods
// require gpu-env) and created by the kubelet's retry once the new
// plugin registered.
func rolloutNewImage(t *testing.T, n *node) {
	before := n.readyPod(pluginNS, pluginSelector, time.Minute)
	// Recorded (issue 41): replayed below through gpu-env as it is now.
	recorderDeployed(t, n)
	gpuConfig := n.kubectl("-n", pluginNS, "get", "configmap", n.gpuEnvConfigMap(), "-o", "jsonpath={.data.config\\.yaml}")
	newImage := pluginImage + ":" + pluginTags[1]

	loopCtx, stopLoop := context.WithCancel(n.ctx)
	var (
		mu      sync.Mutex
		created []string
		loopErr error
		wg      sync.WaitGroup
	)
	dir := t.TempDir()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			name := fmt.Sprintf("roll-%03d", i)
			path := filepath.Join(dir, name+".yaml")
			err := os.WriteFile(path, []byte(workloadPod(name)), 0o644)
			if err == nil {
				_, err = n.Kubectl(n.ctx, "create", "-f", path)
			}
			mu.Lock()
			if err != nil && loopErr == nil {
				loopErr = err
			}
			if err == nil {
				created = append(created, name)
			}
			mu.Unlock()
			select {
			case <-loopCtx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	stop := func() {
		stopLoop()
		wg.Wait()
	}
	defer stop()

	time.Sleep(2 * time.Second) // a few pods before the rollout
	start := time.Now()
	n.kubectl("-n", pluginNS, "set", "image", "daemonset/"+pluginDS, "plugin="+newImage)
	n.kubectl("-n", pluginNS, "rollout", "status", "daemonset/"+pluginDS, "--timeout=180s")
	rolled := time.Since(start)
	time.Sleep(3 * time.Second) // a few pods after it
	stop()
	if loopErr != nil {
		t.Fatalf("creating pods during the rollout: %v", loopErr)
	}
	after := n.readyPod(pluginNS, pluginSelector, time.Minute)
	if after.Metadata.Name == before.Metadata.Name || after.Status.ContainerStatuses[0].Image != newImage {
		t.Fatalf("plugin pod %s (%s) -> %s (%s): want a new pod running %s", before.Metadata.Name,
			before.Status.ContainerStatuses[0].Image, after.Metadata.Name, after.Status.ContainerStatuses[0].Image, newImage)
	}
	evidence(t, "kubectl set image + rollout status: plugin pod %s (%s, %s) -> %s (%s, %s) in %s",
		before.Metadata.Name, before.Status.ContainerStatuses[0].Image, before.Status.ContainerStatuses[0].ImageID,
		after.Metadata.Name, after.Status.ContainerStatuses[0].Image, after.Status.ContainerStatuses[0].ImageID, rolled.Round(time.Millisecond))

	// Every pod created must run, adjusted.
	var pods []pod
	err := harness.Eventually(n.ctx, 4*time.Minute, func() error {
		var err error
		pods, err = n.pods(appNS, "app=roll")
		if err != nil {
			return err
		}
		notReady := 0
		for _, p := range pods {
			if !p.ready() {
				notReady++
			}
		}
		if len(pods) != len(created) || notReady > 0 {
			return fmt.Errorf("%d pods listed of %d created, %d not Ready", len(pods), len(created), notReady)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, n.describe(appNS, "app=roll"))
	}
	for _, p := range pods {
		info := n.container(p)
		for key, want := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility,video"} {
			if err := checkEnv(info, key, want); err != nil {
				t.Errorf("pod %s created during the rollout is not adjusted: %v", p.Metadata.Name, err)
			}
		}
	}
	refused := refusedPods(n, "app=roll")
	evidence(t, "%d pods created, one a second, during the rollout: all Running with NVIDIA_VISIBLE_DEVICES=void and "+
		"NVIDIA_DRIVER_CAPABILITIES=compute,utility,video in spec and /proc; %d of them had a container creation refused "+
		"while no gpu-env was registered (%s) and were created adjusted on the kubelet's retry",
		len(pods), len(refused), strings.Join(refused, " "))
	replayedRollout(t, n, pods, gpuConfig)
	n.kubectl("-n", appNS, "delete", "pods", "-l", "app=roll", "--wait=true", "--timeout=120s")
}

// refusedPods returns the pods (matching selector) with a Failed event
// saying a required plugin was missing, and one such message.
func refusedPods(n *node, selector string) []string {
	n.t.Helper()
	out := n.kubectl("-n", appNS, "get", "events", "--field-selector", "reason=Failed", "-o",
		`jsonpath={range .items[*]}{.involvedObject.name}{"\t"}{.message}{"\n"}{end}`)
	seen := map[string]bool{}
	var names []string
	msg := ""
	for _, l := range strings.Split(out, "\n") {
		name, m, ok := strings.Cut(l, "\t")
		if !ok || !strings.Contains(m, "required plugin") || !strings.HasPrefix(name, "roll-") {
			continue
		}
		if msg == "" {
			msg = m
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	if msg != "" {
		evidence(n.t, "kubelet event: %s", msg)
	}
	return names
}

// metricsScraped: a pod in a namespace labelled for scraping (as the
// base's NetworkPolicy asks) reads the plugin's /metrics and /readyz over
// the pod network.
func metricsScraped(t *testing.T, n *node) {
	p := n.readyPod(pluginNS, pluginSelector, time.Minute)
	base := fmt.Sprintf("http://%s:9090", p.Status.PodIP)
	n.apply(`apiVersion: v1
kind: Namespace
metadata:
  name: monitoring
  labels: {nrikit.dev/nri-plugin-metrics: scrape}
`)
	// The API server admits a pod once its namespace has a default
	// service account, which the controller manager makes.
	err := harness.Eventually(n.ctx, time.Minute, func() error {
		_, err := n.Kubectl(n.ctx, "-n", "monitoring", "get", "serviceaccount", "default")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: scraper
  namespace: monitoring
  labels: {nrikit.dev/nri-plugin-metrics: scrape}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
    - name: scrape
      image: %s
      imagePullPolicy: Never
      args: [%q, %q]
`, httpgetImage, base+"/metrics", base+"/readyz"))
	var phase string
	err = harness.Eventually(n.ctx, 3*time.Minute, func() error {
		out, err := n.Kubectl(n.ctx, "-n", "monitoring", "get", "pod", "scraper", "-o", "jsonpath={.status.phase}")
		if err != nil {
			return err
		}
		phase = string(out)
		switch phase {
		case "Succeeded":
			return nil
		case "Failed":
			return harness.Permanent(fmt.Errorf("the scraper failed"))
		}
		return fmt.Errorf("scraper %s", phase)
	})
	logs, lerr := n.Kubectl(n.ctx, "-n", "monitoring", "logs", "scraper")
	if err != nil || lerr != nil {
		t.Fatalf("scraper: %v %v\n%s\n%s", err, lerr, logs, n.describe("monitoring", "nrikit.dev/nri-plugin-metrics=scrape"))
	}
	scraperIP := n.kubectl("-n", "monitoring", "get", "pod", "scraper", "-o", "jsonpath={.status.podIP}")
	for _, want := range []string{"GET " + base + "/metrics 200 OK", `nri_stub_connection_state{state="registered"} 1`,
		`nri_stub_handler_calls_total{handler="CreateContainer"}`, "GET " + base + "/readyz 200 OK"} {
		line := lineWith(string(logs), want)
		if line == "" {
			t.Errorf("the scraper's output has no %q:\n%s", want, logs)
			continue
		}
		evidence(t, "scraper pod monitoring/scraper (%s) -> plugin pod %s: %s", scraperIP, p.Metadata.Name, line)
	}
}

// daemonSetDeleted: deleting the DaemonSet removes the plugin and leaves
// the workload's containers running and the runtime serving: a pod that
// does not require the plugin is created (unadjusted), one that requires
// it is refused with the plugin's name (its sandbox, FailedCreatePodSandBox,
// or its container, Failed: the runtime gates both).
func daemonSetDeleted(t *testing.T, n *node) {
	app := n.readyPod(appNS, appSelector, time.Minute)
	before := n.container(app)
	n.kubectl("-n", pluginNS, "delete", "daemonset", pluginDS, "--wait=true", "--timeout=120s")
	n.noPods(pluginNS, pluginSelector, 2*time.Minute)
	after := n.container(app)
	if after.Pid != before.Pid || !harness.Alive(before.Pid) {
		t.Fatalf("workload container pid %d -> %d (alive %v): want the same process running", before.Pid, after.Pid, harness.Alive(before.Pid))
	}
	if err := checkEnv(after, "NVIDIA_DRIVER_CAPABILITIES", "compute,utility,video"); err != nil {
		t.Error(err)
	}
	evidence(t, "DaemonSet deleted, no plugin pod left; Deployment pod %s still %s, same pid %d, environment intact",
		app.Metadata.Name, after.State, after.Pid)
	status, err := runtimeConditions(n)
	if err != nil || !strings.Contains(status, "RuntimeReady=true") || !strings.Contains(status, "NetworkReady=true") {
		t.Fatalf("crictl info: %s %v", status, err)
	}
	nodeReady := n.kubectl("get", "node", harness.NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	if nodeReady != "True" {
		t.Errorf("node Ready=%s after the DaemonSet's deletion", nodeReady)
	}
	evidence(t, "crictl info: %s; node Ready=%s", status, nodeReady)

	n.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: plain
  namespace: %s
  labels: {accel: gpu, app: plain}
spec:
  terminationGracePeriodSeconds: 1
  automountServiceAccountToken: false
  containers:
    - name: app
      image: %s
      imagePullPolicy: Never
`, appNS, harness.WorkloadImage))
	plain := n.readyPod(appNS, "app=plain", 2*time.Minute)
	pinfo := n.container(plain)
	if _, _, inSpec, inProc, err := envOf(pinfo, "NVIDIA_VISIBLE_DEVICES"); err != nil || inSpec || inProc {
		t.Errorf("pod %s created without the plugin has NVIDIA_VISIBLE_DEVICES (spec %v, /proc %v, %v)", plain.Metadata.Name, inSpec, inProc, err)
	}
	evidence(t, "pod %s (no required plugin) created after the deletion: Running, pid %d, no NVIDIA_VISIBLE_DEVICES", plain.Metadata.Name, pinfo.Pid)

	n.apply(workloadPod("needs-plugin"))
	msg := n.eventWith(appNS, "needs-plugin", "required plugin", "app=roll")
	evidence(t, "pod needs-plugin (requires gpu-env) refused: %s", msg)
}

// lineWith returns the first line of s that holds substr, trimmed.
func lineWith(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// runtimeConditions returns the runtime's status conditions from
// `crictl info`, as TYPE=STATUS words.
func runtimeConditions(n *node) (string, error) {
	out, err := n.Containerd.CRI().Run(n.ctx, "info")
	if err != nil {
		return "", err
	}
	var info struct {
		Status struct {
			Conditions []struct {
				Type   string `json:"type"`
				Status bool   `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("decoding crictl info: %w", err)
	}
	var words []string
	for _, c := range info.Status.Conditions {
		words = append(words, fmt.Sprintf("%s=%v", c.Type, c.Status))
	}
	return strings.Join(words, " "), nil
}
