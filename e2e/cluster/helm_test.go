package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The Helm release of deploy/helm/nrikit-plugin the cluster test installs.
const (
	helmRelease = "gpu-env"
	// helmCaps is the NVIDIA_DRIVER_CAPABILITIES the release's values set,
	// unlike the kustomize overlay's and its edited copy's, so that a pod
	// adjusted with it was adjusted by the Helm-installed plugin.
	helmCaps = "compute,utility,graphics"
)

// loadChart loads the chart from the repository.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(filepath.Join(env.repo, "deploy", "helm", "nrikit-plugin"))
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return ch
}

// helmValues are the release's values: the chart's defaults (the gpu-env
// overlay's) with the driver capabilities set to helmCaps.
func helmValues(t *testing.T, ch *chart.Chart) map[string]any {
	t.Helper()
	conf, _ := ch.Values["config"].(string)
	const old = "NVIDIA_DRIVER_CAPABILITIES: compute,utility\n"
	if !strings.Contains(conf, old) {
		t.Fatalf("the chart's default config has no %q:\n%s", old, conf)
	}
	return map[string]any{"config": strings.Replace(conf, old, "NVIDIA_DRIVER_CAPABILITIES: "+helmCaps+"\n", 1)}
}

// rendered is what the chart renders, decoded strictly by kind.
type rendered struct {
	ds        appsv1.DaemonSet
	cm        corev1.ConfigMap
	np        networkingv1.NetworkPolicy
	manifests int
}

// renderChart renders the chart as `helm install --dry-run` does, without
// a cluster, and decodes its objects.
func renderChart(t *testing.T, ch *chart.Chart, vals map[string]any) rendered {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly = true, true
	inst.ReleaseName, inst.Namespace = helmRelease, pluginNS
	rel, err := inst.Run(ch, vals)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	var r rendered
	for _, doc := range strings.Split(rel.Manifest, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("decoding %q: %v", doc, err)
		}
		var into any
		switch meta.Kind {
		case "DaemonSet":
			into = &r.ds
		case "ConfigMap":
			into = &r.cm
		case "NetworkPolicy":
			into = &r.np
		case "":
			continue
		default:
			t.Errorf("the chart renders a %s: not expected", meta.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("decoding the %s: %v\n%s", meta.Kind, err, doc)
		}
		r.manifests++
	}
	return r
}

// TestHelmChartRenders renders deploy/helm/nrikit-plugin with the values
// the cluster test installs and checks the objects keep the kustomize
// base's posture: no capability, no escalation, a read-only root, no
// token, the NRI socket's directory as the only host path (read-only), a
// /readyz readiness probe, no egress.
func TestHelmChartRenders(t *testing.T) {
	ch := loadChart(t)
	r := renderChart(t, ch, helmValues(t, ch))
	if r.manifests != 3 {
		t.Fatalf("%d objects rendered, want a DaemonSet, a ConfigMap and a NetworkPolicy", r.manifests)
	}
	var problems []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	ds, spec := r.ds, r.ds.Spec.Template.Spec
	check(ds.Name == pluginDS && ds.Namespace == pluginNS, "DaemonSet %s/%s, want %s/%s", ds.Namespace, ds.Name, pluginNS, pluginDS)
	check(ds.Spec.Template.Labels["app.kubernetes.io/name"] == pluginDS, "pod labels %v", ds.Spec.Template.Labels)
	check(spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken, "the service account token is mounted")
	check(!spec.HostNetwork && !spec.HostPID && !spec.HostIPC, "host namespaces shared")
	check(len(spec.Containers) == 1 && len(spec.InitContainers) == 0, "%d containers, %d init containers", len(spec.Containers), len(spec.InitContainers))
	c := spec.Containers[0]
	sc := c.SecurityContext
	check(sc != nil && sc.Privileged != nil && !*sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation &&
		sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem && sc.Capabilities != nil &&
		len(sc.Capabilities.Add) == 0 && fmt.Sprint(sc.Capabilities.Drop) == "[ALL]", "container securityContext %+v", sc)
	check(c.Image == pluginImage+":"+pluginTags[0], "image %s", c.Image)
	check(c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path == "/readyz", "readiness probe %+v", c.ReadinessProbe)
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			check(v.HostPath.Path == "/var/run/nri", "host path %s", v.HostPath.Path)
		}
	}
	for _, m := range c.VolumeMounts {
		check(m.ReadOnly, "volume %s mounted writable", m.Name)
	}
	check(strings.Join(c.Args, " ") == "-idx $(NRI_PLUGIN_INDEX) -socket /var/run/nri/nri.sock -metrics-addr :9090 -config /etc/nri-plugin/config.yaml",
		"args %q", c.Args)
	check(r.cm.Data["index"] == "50" && strings.Contains(r.cm.Data["config.yaml"], "NVIDIA_DRIVER_CAPABILITIES: "+helmCaps),
		"ConfigMap %v", r.cm.Data)
	check(len(r.np.Spec.Egress) == 0 && fmt.Sprint(r.np.Spec.PolicyTypes) == "[Ingress Egress]", "NetworkPolicy %+v", r.np.Spec)
	check(len(spec.Tolerations) == 1 && spec.Tolerations[0].Key == "nvidia.com/gpu", "tolerations %+v", spec.Tolerations)
	if len(problems) > 0 {
		t.Fatalf("the chart's objects:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("EVIDENCE %s: deploy/helm/nrikit-plugin renders %d objects: DaemonSet %s/%s (image %s, user %d, read-only root, capabilities drop %v, "+
		"host path /var/run/nri read-only, readiness %s), ConfigMap %s (index %s), NetworkPolicy %s (policy types %v, no egress rule)",
		t.Name(), r.manifests, ds.Namespace, ds.Name, c.Image, *sc.RunAsUser, sc.Capabilities.Drop, c.ReadinessProbe.HTTPGet.Path,
		r.cm.Name, r.cm.Data["index"], r.np.Name, r.np.Spec.PolicyTypes)

	// A bad index or name fails the rendering.
	for _, bad := range []map[string]any{{"plugin": map[string]any{"index": 100}}, {"plugin": map[string]any{"name": "Bad_Name"}}} {
		inst := action.NewInstall(&action.Configuration{})
		inst.DryRun, inst.ClientOnly = true, true
		inst.ReleaseName, inst.Namespace = helmRelease, pluginNS
		if _, err := inst.Run(ch, bad); err == nil {
			t.Errorf("values %v rendered; want them refused", bad)
		}
	}
}

// helmConfig is a Helm action configuration talking to the cluster's API
// server, which listens in the cluster's network namespace: every
// connection is opened from a thread that entered it.
func helmConfig(t *testing.T, n *node) *action.Configuration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.Dir, "holder.pid"))
	if err != nil {
		t.Fatal(err)
	}
	netns := fmt.Sprintf("/proc/%s/ns/net", strings.TrimSpace(string(b)))
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, ns, cache := n.Kubeconfig, pluginNS, t.TempDir()
	flags.KubeConfig, flags.Namespace, flags.CacheDir = &kubeconfig, &ns, &cache
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.Dial = dialIn(netns)
		return c
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, pluginNS, "secret", func(format string, args ...any) { t.Logf("helm: "+format, args...) }); err != nil {
		t.Fatalf("helm: %v", err)
	}
	return cfg
}

// dialIn returns a dialer opening its connections in the network
// namespace at netns: the socket is made on a thread locked to the
// calling goroutine, which enters the namespace and goes back to its own
// before unlocking. The thread must not exit (as it would if the goroutine
// returned locked): the harness starts the cluster's components with
// Pdeathsig, which the kernel sends when the thread that forked them
// exits, and that thread may be this one.
func dialIn(netns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := os.Open(netns)
		if err != nil {
			return nil, err
		}
		defer target.Close()
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer own.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("entering %s: %w", netns, err)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if rerr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// Left locked: the thread must not run anything else in the
			// cluster's namespace.
			panic(fmt.Sprintf("returning to the test's network namespace: %v", rerr))
		}
		runtime.UnlockOSThread()
		return conn, err
	}
}

// helmInstalled: the chart, installed with Helm's Go library (helm
// install --wait), gives a plugin pod Ready through /readyz; a GPU pod
// requiring gpu-env runs with the values' configuration; helm uninstall
// removes the plugin and leaves the runtime and the node healthy.
func helmInstalled(t *testing.T, n *node) {
	// The kustomize overlay's objects the DaemonSet's deletion left (its
	// NetworkPolicy has the chart's name).
	n.kubectl("delete", "-k", filepath.Join(env.repo, "deploy", "kustomize", "overlays", "gpu-env"), "--ignore-not-found")
	ch := loadChart(t)
	cfg := helmConfig(t, n)
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace = helmRelease, pluginNS
	inst.Wait, inst.Timeout = true, 3*time.Minute
	start := time.Now()
	rel, err := inst.RunWithContext(n.ctx, ch, helmValues(t, ch))
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, n.describe(pluginNS, pluginSelector))
	}
	p := n.readyPod(pluginNS, pluginSelector, time.Minute)
	managed := n.kubectl("-n", pluginNS, "get", "daemonset", pluginDS, "-o",
		`jsonpath={.metadata.labels.app\.kubernetes\.io/managed-by} {.metadata.annotations.meta\.helm\.sh/release-name} {.spec.template.spec.containers[0].readinessProbe.httpGet.path}`)
	if managed != "Helm "+helmRelease+" /readyz" {
		t.Errorf("DaemonSet managed-by, release, readiness path: %q", managed)
	}
	evidence(t, "helm install (helm.sh/helm/v3 action.Install, Wait) %s %s: release %s revision %d %s; DaemonSet %s (%s); pod %s/%s Ready=true %s after install, image %s",
		helmRelease, "deploy/helm/nrikit-plugin", rel.Name, rel.Version, rel.Info.Status, pluginDS, managed, pluginNS, p.Metadata.Name,
		time.Since(start).Round(time.Millisecond), p.Status.ContainerStatuses[0].Image)

	n.apply(strings.Replace(workloadPod("helm-app"), "app: roll", "app: helm-app", 1))
	app := n.readyPod(appNS, "app=helm-app", 2*time.Minute)
	info := n.container(app)
	for key, want := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": helmCaps} {
		if err := checkEnv(info, key, want); err != nil {
			t.Fatalf("pod %s: %v", app.Metadata.Name, err)
		}
		evidence(t, "pod %s/%s (requires gpu-env) container pid %d: spec process.env and /proc/%d/environ have %s=%s",
			appNS, app.Metadata.Name, info.Pid, info.Pid, key, want)
	}

	un := action.NewUninstall(cfg)
	un.Wait, un.Timeout = true, 2*time.Minute
	start = time.Now()
	if _, err := un.Run(helmRelease); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	n.noPods(pluginNS, pluginSelector, 2*time.Minute)
	left := n.kubectl("-n", pluginNS, "get", "daemonset,configmap,networkpolicy", "-l", "app.kubernetes.io/instance="+helmRelease, "-o", "name")
	if left != "" {
		t.Errorf("objects left after helm uninstall: %s", left)
	}
	status, err := runtimeConditions(n)
	if err != nil || !strings.Contains(status, "RuntimeReady=true") || !strings.Contains(status, "NetworkReady=true") {
		t.Fatalf("crictl info: %s %v", status, err)
	}
	nodeReady := n.kubectl("get", "node", harness.NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	after := n.container(app)
	if after.Pid != info.Pid || nodeReady != "True" {
		t.Fatalf("after helm uninstall: pod %s pid %d -> %d, node Ready=%s", app.Metadata.Name, info.Pid, after.Pid, nodeReady)
	}
	evidence(t, "helm uninstall (action.Uninstall, Wait) %s in %s: no plugin pod, no object of the release left; pod %s still running pid %d; crictl info: %s; node Ready=%s",
		helmRelease, time.Since(start).Round(time.Millisecond), app.Metadata.Name, after.Pid, status, nodeReady)
}
