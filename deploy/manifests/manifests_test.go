package manifests

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The paths, relative to this directory.
const (
	kustomizeDir = "../kustomize"
	pluginsDir   = "../../plugins"
)

// What every plugin DaemonSet promises (deploy/README.md).
const (
	wantNamespace     = "kube-system"
	wantPriorityClass = "system-node-critical"
	wantSocket        = "/var/run/nri/nri.sock"
	wantSocketDir     = "/var/run/nri"
	wantImageRepo     = "localhost/nrikit/" // as deploy/images names the images
	wantConfigFile    = "/etc/nri-plugin/config.yaml"
)

// overlays lists the overlay directories.
func overlays(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(kustomizeDir, "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no overlays")
	}
	return out
}

// render runs kustomize on the overlay directory and decodes every object
// strictly.
func render(t *testing.T, dir string) *Rendered {
	t.Helper()
	r, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestStrictDecoding(t *testing.T) {
	good := []byte("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      priorityClassName: system-node-critical\n")
	var ds appsv1.DaemonSet
	if err := DecodeStrict(good, &ds); err != nil || ds.Spec.Template.Spec.PriorityClassName != wantPriorityClass {
		t.Fatalf("good document: %v, %+v", err, ds.Spec.Template.Spec)
	}
	for _, bad := range []string{
		strings.Replace(string(good), "priorityClassName", "priorityClass", 1),
		strings.Replace(string(good), "template:", "templates:", 1),
		string(good) + "      priorityClassName: again\n",
	} {
		if err := DecodeStrict([]byte(bad), &appsv1.DaemonSet{}); err == nil {
			t.Errorf("decoded without error:\n%s", bad)
		}
	}
}

// TestOverlays renders every overlay and checks its DaemonSet.
func TestOverlays(t *testing.T) {
	indices := map[string]string{}
	for _, name := range overlays(t) {
		t.Run(name, func(t *testing.T) {
			r := render(t, filepath.Join(kustomizeDir, "overlays", name))
			if len(r.DaemonSets) != 1 {
				t.Fatalf("%d DaemonSets, want 1", len(r.DaemonSets))
			}
			idx := checkDaemonSet(t, name, r.DaemonSets[0], r.ConfigMaps)
			checkTrust(t, name, r)
			if other, ok := indices[idx]; ok {
				t.Errorf("index %s is also %s's", idx, other)
			}
			indices[idx] = name
		})
	}
}

// TestEveryPluginHasAnOverlay: every Go plugin under plugins/ (the ones
// deploy/images builds images for) has an overlay, and every overlay is a
// plugin's.
func TestEveryPluginHasAnOverlay(t *testing.T) {
	entries, err := os.ReadDir(pluginsDir)
	if err != nil {
		t.Fatal(err)
	}
	var plugins []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(pluginsDir, e.Name(), "main.go")); e.IsDir() && err == nil {
			plugins = append(plugins, e.Name())
		}
	}
	if got := overlays(t); !slices.Equal(got, plugins) {
		t.Errorf("overlays %v, Go plugins %v", got, plugins)
	}
}

// checkDaemonSet checks what the base promises and returns the plugin
// index.
func checkDaemonSet(t *testing.T, name string, ds *appsv1.DaemonSet, cms map[string]*corev1.ConfigMap) string {
	t.Helper()
	if ds.Namespace != wantNamespace || ds.Name != "nri-plugin-"+name {
		t.Errorf("DaemonSet %s/%s, want %s/nri-plugin-%s", ds.Namespace, ds.Name, wantNamespace, name)
	}
	sel := ds.Spec.Selector
	if sel == nil || len(sel.MatchLabels) == 0 {
		t.Fatal("no selector")
	}
	for k, v := range sel.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, ds.Spec.Template.Labels)
		}
	}
	if sel.MatchLabels["app.kubernetes.io/name"] != "nri-plugin-"+name {
		t.Errorf("selector %v: each plugin needs its own", sel.MatchLabels)
	}
	pod := &ds.Spec.Template.Spec
	if pod.PriorityClassName != wantPriorityClass {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := &pod.Containers[0]
	if want := wantImageRepo + name + ":"; !strings.HasPrefix(c.Image, want) {
		t.Errorf("image %q, want %s...", c.Image, want)
	}
	flags := parseArgs(t, c.Args)

	// The socket, through its host directory.
	if flags["socket"] != wantSocket {
		t.Errorf("-socket %q, want %s", flags["socket"], wantSocket)
	}
	vol := mountedVolume(t, pod, c, path.Dir(flags["socket"]))
	if vol.HostPath == nil || vol.HostPath.Path != wantSocketDir || vol.HostPath.Type == nil || *vol.HostPath.Type != corev1.HostPathDirectory {
		t.Errorf("socket volume %+v, want hostPath %s (Directory)", vol.VolumeSource, wantSocketDir)
	}

	// The index, from the ConfigMap.
	idx := resolveEnv(t, c, flags["idx"], cms)
	if !regexp.MustCompile(`^[0-9]{2}$`).MatchString(idx) {
		t.Errorf("-idx %q resolves to %q, want two digits", flags["idx"], idx)
	}

	// The configuration, from the ConfigMap.
	cfg := mountedVolume(t, pod, c, path.Dir(wantConfigFile))
	if cfg.ConfigMap == nil {
		t.Errorf("%s is not a ConfigMap volume: %+v", path.Dir(wantConfigFile), cfg.VolumeSource)
	} else if cm := cms[cfg.ConfigMap.Name]; cm == nil {
		t.Errorf("ConfigMap %q of the configuration volume is not in the output", cfg.ConfigMap.Name)
	} else if _, ok := cm.Data[path.Base(wantConfigFile)]; !ok {
		t.Errorf("ConfigMap %s has no %s: %v", cm.Name, path.Base(wantConfigFile), cm.Data)
	}
	if v := flags["config"]; v != wantConfigFile {
		t.Errorf("-config %q, want %s", v, wantConfigFile)
	}

	// Probes on the metrics endpoint the arguments open.
	port := metricsPort(t, flags["metrics-addr"])
	checkProbe(t, "readiness", c.ReadinessProbe, "/readyz", port, c)
	checkProbe(t, "liveness", c.LivenessProbe, "/livez", port, c)

	checkSecurity(t, name, pod, c)
	checkResources(t, c.Resources)
	return idx
}

// parseArgs reads the container's -flag value (or -flag=value) arguments.
func parseArgs(t tb, args []string) map[string]string {
	t.Helper()
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			t.Fatalf("argument %q is not a flag (args %q)", a, args)
		}
		k, v, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			if i+1 == len(args) {
				t.Fatalf("flag %s has no value (args %q)", a, args)
			}
			i++
			v = args[i]
		}
		if _, dup := flags[k]; dup {
			t.Errorf("flag -%s given twice (args %q)", k, args)
		}
		flags[k] = v
	}
	return flags
}

// mountedVolume returns the volume the container mounts at dir.
func mountedVolume(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, dir string) *corev1.Volume {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("%s is mounted read-write", dir)
		}
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == m.Name {
				return &pod.Volumes[i]
			}
		}
		t.Fatalf("mount %s names volume %q, which the pod lacks", dir, m.Name)
	}
	t.Fatalf("nothing is mounted at %s (mounts %+v)", dir, c.VolumeMounts)
	return nil
}

// resolveEnv expands one $(VAR) argument from the container's environment,
// following configMapKeyRef into the rendered ConfigMaps.
func resolveEnv(t *testing.T, c *corev1.Container, arg string, cms map[string]*corev1.ConfigMap) string {
	t.Helper()
	m := regexp.MustCompile(`^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$`).FindStringSubmatch(arg)
	if m == nil {
		return arg
	}
	for _, e := range c.Env {
		if e.Name != m[1] {
			continue
		}
		if e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
			return e.Value
		}
		ref := e.ValueFrom.ConfigMapKeyRef
		cm := cms[ref.Name]
		if cm == nil {
			t.Fatalf("%s: ConfigMap %q is not in the output", e.Name, ref.Name)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			t.Fatalf("%s: ConfigMap %s has no key %q", e.Name, ref.Name, ref.Key)
		}
		return v
	}
	t.Fatalf("argument %s: no variable %s in the container's environment", arg, m[1])
	return ""
}

// metricsPort is the port of -metrics-addr, which must listen on every
// address of the pod (the kubelet probes the pod's IP).
func metricsPort(t tb, addr string) int32 {
	t.Helper()
	host, port, ok := strings.Cut(addr, ":")
	if !ok || (host != "" && host != "0.0.0.0" && host != "[::]") {
		t.Fatalf("-metrics-addr %q: want :PORT, reachable from the kubelet", addr)
	}
	var p int32
	if _, err := fmt.Sscan(port, &p); err != nil || p <= 0 {
		t.Fatalf("-metrics-addr %q: bad port", addr)
	}
	return p
}

// checkProbe checks an HTTP probe of path on the container's port.
func checkProbe(t *testing.T, what string, p *corev1.Probe, wantPath string, wantPort int32, c *corev1.Container) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("no HTTP %s probe", what)
		return
	}
	if p.HTTPGet.Path != wantPath {
		t.Errorf("%s probe path %q, want %s", what, p.HTTPGet.Path, wantPath)
	}
	if got := probePort(t, p.HTTPGet.Port, c); got != wantPort {
		t.Errorf("%s probe port %d, but -metrics-addr opens %d", what, got, wantPort)
	}
}

// probePort resolves a probe's port, by number or by the container port's
// name.
func probePort(t tb, port intstr.IntOrString, c *corev1.Container) int32 {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	t.Errorf("probe port %q is not a container port", port.StrVal)
	return 0
}

// writableHostDirs are the host directories a plugin writes, by overlay,
// mounted at the same path: the recorder's recordings (deploy/README.md,
// Trust). Every other mount is read-only.
var writableHostDirs = map[string]string{"recorder": "/var/lib/nri-record"}

// checkSecurity checks that the plugin runs without capabilities,
// privilege escalation or a writable root file system, and writes no
// mount but the one host directory writableHostDirs gives its overlay.
func checkSecurity(t *testing.T, name string, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal("no security context")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("capabilities %+v, want drop [ALL] and no add", sc.Capabilities)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the root file system is writable")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("host namespaces shared")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted: the plugin does not use the API server")
	}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly {
			continue
		}
		dir, ok := writableHostDirs[name]
		if !ok || m.MountPath != dir || m.SubPath != "" {
			t.Errorf("volume %s is mounted read-write at %s", m.Name, m.MountPath)
			continue
		}
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Volumes[i].HostPath == nil || pod.Volumes[i].HostPath.Path != dir {
			t.Errorf("volume %s, mounted read-write at %s, is not the host's %s", m.Name, m.MountPath, dir)
		}
	}
}

// checkResources checks that CPU and memory have requests and limits,
// requests not above limits.
func checkResources(t *testing.T, r corev1.ResourceRequirements) {
	t.Helper()
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := r.Requests[res]
		lim, okLim := r.Limits[res]
		if !okReq || !okLim {
			t.Errorf("%s: request %v, limit %v: want both", res, okReq, okLim)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s request %s above its limit %s", res, req.String(), lim.String())
		}
	}
}
