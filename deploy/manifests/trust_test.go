package manifests

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// What deploy/README.md (Trust) promises of every overlay.
const (
	// metricsLabel is the label, on a namespace and on a pod, that the
	// NetworkPolicy lets reach the metrics port.
	metricsLabel, metricsLabelValue = "nrikit.dev/nri-plugin-metrics", "scrape"
)

// annotationPlugins are the plugins that act on what a pod's annotations
// ask: their overlays' configurations name the namespaces they serve.
var annotationPlugins = []string{"device-injector", "gpu-env", "ulimit-adjuster"}

// systemNamespaces must not be among those namespaces.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// checkTrust checks what deploy/README.md's Trust section promises of an
// overlay's output.
func checkTrust(t *testing.T, name string, r *Rendered) {
	t.Helper()
	ds := r.DaemonSets[0]
	pod := &ds.Spec.Template.Spec
	checkTolerations(t, pod.Tolerations)
	checkHostPaths(t, pod.Volumes)
	checkNetworkPolicy(t, ds, r.NetworkPolicies)
	if slices.Contains(annotationPlugins, name) {
		checkScoped(t, overlayConfigText(t, r))
	}
}

// checkTolerations: every toleration names its taint's key; one without a
// key (operator Exists) tolerates every taint.
func checkTolerations(t tb, tols []corev1.Toleration) {
	t.Helper()
	for _, tol := range tols {
		if tol.Key == "" {
			t.Errorf("toleration %+v has no key: it tolerates every taint", tol)
		}
	}
}

// checkHostPaths: every hostPath volume has a type that checks what is
// there and creates nothing (not DirectoryOrCreate, FileOrCreate, or no
// type, which skips the check).
func checkHostPaths(t tb, vols []corev1.Volume) {
	t.Helper()
	for _, v := range vols {
		if v.HostPath == nil {
			continue
		}
		typ := corev1.HostPathUnset
		if v.HostPath.Type != nil {
			typ = *v.HostPath.Type
		}
		switch typ {
		case corev1.HostPathDirectory, corev1.HostPathFile, corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
		default:
			t.Errorf("hostPath volume %s (%s) has type %q: want one that creates nothing on the host, such as Directory", v.Name, v.HostPath.Path, typ)
		}
	}
}

// checkNetworkPolicy: one NetworkPolicy in the DaemonSet's namespace
// selects exactly the plugin's pods, lets nothing out, and lets in only
// the metrics port from pods labelled metricsLabel in namespaces labelled
// metricsLabel.
func checkNetworkPolicy(t tb, ds *appsv1.DaemonSet, nps []*networkingv1.NetworkPolicy) {
	t.Helper()
	if len(nps) != 1 {
		t.Errorf("%d NetworkPolicies, want 1", len(nps))
		return
	}
	np := nps[0]
	if np.Namespace != ds.Namespace {
		t.Errorf("NetworkPolicy in namespace %q, the DaemonSet in %q", np.Namespace, ds.Namespace)
	}
	if !reflect.DeepEqual(&np.Spec.PodSelector, ds.Spec.Selector) {
		t.Errorf("NetworkPolicy pod selector %+v, want the DaemonSet's %+v", np.Spec.PodSelector, ds.Spec.Selector)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("policy types %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Egress) != 0 {
		t.Errorf("egress rules %+v: the plugin needs no network", np.Spec.Egress)
	}
	c := &ds.Spec.Template.Spec.Containers[0]
	metrics := metricsPort(t, parseArgs(t, c.Args)["metrics-addr"])
	if len(np.Spec.Ingress) == 0 {
		t.Errorf("no ingress rule: Prometheus cannot reach the metrics")
	}
	scraper := labels.Set{metricsLabel: metricsLabelValue}
	for i, rule := range np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Errorf("ingress rule %d opens every port", i)
		}
		for _, p := range rule.Ports {
			if p.Port == nil || probePort(t, *p.Port, c) != metrics || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) || p.EndPort != nil {
				t.Errorf("ingress rule %d opens port %+v, want the metrics port %d/TCP only", i, p, metrics)
			}
		}
		if len(rule.From) == 0 {
			t.Errorf("ingress rule %d lets in every source", i)
		}
		for j, peer := range rule.From {
			if peer.IPBlock != nil {
				t.Errorf("ingress rule %d, peer %d: an IP block %+v", i, j, peer.IPBlock)
			}
			for what, sel := range map[string]*metav1.LabelSelector{"namespace": peer.NamespaceSelector, "pod": peer.PodSelector} {
				s, err := metav1.LabelSelectorAsSelector(sel)
				switch {
				case sel == nil || err != nil:
					t.Errorf("ingress rule %d, peer %d: %s selector %+v (%v): want one requiring %s=%s", i, j, what, sel, err, metricsLabel, metricsLabelValue)
				case !s.Matches(scraper) || s.Matches(labels.Set{}) || s.Matches(labels.Set(ds.Spec.Template.Labels)):
					t.Errorf("ingress rule %d, peer %d: %s selector %q: want exactly the label %s=%s", i, j, what, s, metricsLabel, metricsLabelValue)
				}
			}
		}
	}
}

// overlayConfigText returns the overlay's plugin configuration, the
// config.yaml of the ConfigMap mounted at /etc/nri-plugin.
func overlayConfigText(t *testing.T, r *Rendered) string {
	t.Helper()
	for _, cm := range r.ConfigMaps {
		if data, ok := cm.Data[filepath.Base(wantConfigFile)]; ok {
			return data
		}
	}
	t.Fatalf("no ConfigMap holds %s", filepath.Base(wantConfigFile))
	return ""
}

// shippedNamespaces returns the namespaces of an annotation plugin's
// configuration.
func shippedNamespaces(t tb, config string) []string {
	t.Helper()
	var c struct {
		Namespaces []string `json:"namespaces"`
	}
	if err := yaml.Unmarshal([]byte(config), &c); err != nil {
		t.Fatalf("the plugin configuration: %v\n%s", err, config)
	}
	return c.Namespaces
}

// checkScoped: the configuration names the namespaces the plugin serves,
// literally (no pattern), none of them a system namespace.
func checkScoped(t tb, config string) {
	t.Helper()
	ns := shippedNamespaces(t, config)
	if len(ns) == 0 {
		t.Errorf("the configuration names no namespaces: the plugin serves every pod\n%s", config)
	}
	for _, n := range ns {
		if strings.ContainsAny(n, `*?[\`) {
			t.Errorf("namespace %q is a pattern: ship names", n)
		}
		for _, sys := range systemNamespaces {
			if ok, _ := path.Match(n, sys); ok {
				t.Errorf("namespace %q takes in %s", n, sys)
			}
		}
	}
}

// TestTrustChecks: the checks refuse what they are for.
func TestTrustChecks(t *testing.T) {
	dir := corev1.HostPathDirectory
	orCreate := corev1.HostPathDirectoryOrCreate
	for name, tc := range map[string]struct {
		check func(t tb)
		fails bool
	}{
		"toleration with a key": {func(t tb) {
			checkTolerations(t, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}})
		}, false},
		"toleration of every taint": {func(t tb) { checkTolerations(t, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}) }, true},
		"hostPath Directory": {func(t tb) {
			checkHostPaths(t, []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/x", Type: &dir}}}})
		}, false},
		"hostPath DirectoryOrCreate": {func(t tb) {
			checkHostPaths(t, []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/x", Type: &orCreate}}}})
		}, true},
		"hostPath without type": {func(t tb) {
			checkHostPaths(t, []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/x"}}}})
		}, true},
		"namespaces":       {func(t tb) { checkScoped(t, "namespaces: [gpu-workloads, ml]\n") }, false},
		"no namespaces":    {func(t tb) { checkScoped(t, "devices: []\n") }, true},
		"every namespace":  {func(t tb) { checkScoped(t, "namespaces: ['*']\n") }, true},
		"kube-system":      {func(t tb) { checkScoped(t, "namespaces: [ml, kube-system]\n") }, true},
		"a NetworkPolicy":  {func(t tb) { checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{testPolicy()}) }, false},
		"no NetworkPolicy": {func(t tb) { checkNetworkPolicy(t, testDaemonSet(), nil) }, true},
		"egress allowed": {func(t tb) {
			np := testPolicy()
			np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
			checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{np})
		}, true},
		"every port": {func(t tb) {
			np := testPolicy()
			np.Spec.Ingress[0].Ports = nil
			checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{np})
		}, true},
		"every pod of the namespace": {func(t tb) {
			np := testPolicy()
			np.Spec.Ingress[0].From[0].PodSelector = &metav1.LabelSelector{}
			checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{np})
		}, true},
		"the plugin's own label added": {func(t tb) {
			np := testPolicy()
			np.Spec.Ingress[0].From[0].PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{metricsLabel: metricsLabelValue, "app.kubernetes.io/name": "nri-plugin-x"}}
			checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{np})
		}, true},
		"other pods selected": {func(t tb) {
			np := testPolicy()
			np.Spec.PodSelector = metav1.LabelSelector{}
			checkNetworkPolicy(t, testDaemonSet(), []*networkingv1.NetworkPolicy{np})
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			if failed := runCheck(tc.check); failed != tc.fails {
				t.Errorf("check failed: %v, want %v", failed, tc.fails)
			}
		})
	}
}

// tb is what the checks need of a *testing.T, so that a test can run
// them on a recorder.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// recorder is a tb that records whether a check failed.
type recorder struct{ failed bool }

// fatal is the panic of recorder.Fatalf.
type fatal struct{}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(fatal{}) }

// runCheck runs check on a recorder and reports whether it failed.
func runCheck(check func(t tb)) (failed bool) {
	r := &recorder{}
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(fatal); !ok {
				panic(v)
			}
		}
		failed = r.failed
	}()
	check(r)
	return r.failed
}

func testDaemonSet() *appsv1.DaemonSet {
	sel := map[string]string{"app.kubernetes.io/name": "nri-plugin-x"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: wantNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Args:  []string{"-metrics-addr", ":9090"},
					Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}},
				}}},
			},
		},
	}
}

func testPolicy() *networkingv1.NetworkPolicy {
	port := intstrName("metrics")
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: wantNamespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "nri-plugin-x"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{metricsLabel: metricsLabelValue}},
					PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: metricsLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{metricsLabelValue}},
					}},
				}},
			}},
		},
	}
}

// releaseDigest is the image reference of a release overlay: a name
// without tag, and a sha256 digest.
var releaseDigest = regexp.MustCompile(`^([^@]+)@(sha256:[0-9a-f]{64})$`)

// TestReleaseOverlays: every overlay has a release overlay, whose output
// is the overlay's with the image pinned by digest and no tag.
func TestReleaseOverlays(t *testing.T) {
	releases, err := os.ReadDir(filepath.Join(kustomizeDir, "release"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range releases {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if got := overlays(t); !slices.Equal(names, got) {
		t.Errorf("release overlays %v, overlays %v", names, got)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			rel := render(t, filepath.Join(kustomizeDir, "release", name))
			dev := render(t, filepath.Join(kustomizeDir, "overlays", name))
			checkPinned(t, name, rel)
			if len(rel.DaemonSets) != 1 || len(dev.DaemonSets) != 1 {
				t.Fatalf("%d and %d DaemonSets", len(rel.DaemonSets), len(dev.DaemonSets))
			}
			rel.DaemonSets[0].Spec.Template.Spec.Containers[0].Image = dev.DaemonSets[0].Spec.Template.Spec.Containers[0].Image
			if !reflect.DeepEqual(rel, dev) {
				t.Errorf("the release overlay's output differs from the overlay's by more than the image")
			}
		})
	}
}

// checkPinned: the DaemonSet's image is NAME@sha256:HEX, NAME without a
// tag and ending in the plugin's name.
func checkPinned(t *testing.T, name string, r *Rendered) {
	t.Helper()
	for _, ds := range r.DaemonSets {
		for _, c := range ds.Spec.Template.Spec.Containers {
			m := releaseDigest.FindStringSubmatch(c.Image)
			if m == nil {
				t.Errorf("image %q is not pinned by a sha256 digest", c.Image)
				continue
			}
			if i := strings.LastIndex(m[1], ":"); i > strings.LastIndex(m[1], "/") {
				t.Errorf("image %q has a tag besides its digest", c.Image)
			}
			if path.Base(m[1]) != name {
				t.Errorf("image %q is not a %s image", c.Image, name)
			}
		}
	}
}

func intstrName(name string) intstr.IntOrString { return intstr.FromString(name) }

// policyIdentity is the identity section of an overlay's grant
// (policy.yaml: docs/policy.md, Identity), as far as a DaemonSet's pods
// can meet it.
type policyIdentity struct {
	Namespaces       []string `json:"namespaces"`
	PodLabelSelector string   `json:"podLabelSelector"`
	ContainerNames   []string `json:"containerNames"`
}

// overlayIdentity returns the identity of the one grant of the overlay's
// policy.yaml.
func overlayIdentity(t *testing.T, name string) policyIdentity {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(kustomizeDir, "overlays", name, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Grants []struct {
			Identity *policyIdentity `json:"identity"`
		} `json:"grants"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Grants) != 1 || doc.Grants[0].Identity == nil {
		t.Fatalf("%s/policy.yaml: want one grant with an identity, have %+v", name, doc.Grants)
	}
	return *doc.Grants[0].Identity
}

// selects reports whether the DaemonSet's pods meet the identity.
func (id policyIdentity) selects(t *testing.T, ds *appsv1.DaemonSet) bool {
	t.Helper()
	sel, err := labels.Parse(id.PodLabelSelector)
	if err != nil {
		t.Fatalf("podLabelSelector %q: %v", id.PodLabelSelector, err)
	}
	match := func(globs []string, s string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { ok, _ := path.Match(g, s); return ok })
	}
	pod := &ds.Spec.Template
	return match(id.Namespaces, ds.Namespace) && sel.Matches(labels.Set(pod.Labels)) &&
		slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return match(id.ContainerNames, c.Name) })
}

// TestGrantsBindTheirDaemonSets: the identity of each overlay's grant
// (and so of the node policy's, which TestShippedNodePolicy keeps equal)
// takes the pods the overlay's DaemonSet renders, namespace, labels and
// container, and not those of any other overlay: no sample can register
// as another and get its grant.
func TestGrantsBindTheirDaemonSets(t *testing.T) {
	names := overlays(t)
	daemonSets := map[string]*appsv1.DaemonSet{}
	for _, name := range names {
		daemonSets[name] = render(t, filepath.Join(kustomizeDir, "overlays", name)).DaemonSets[0]
	}
	for _, name := range names {
		id := overlayIdentity(t, name)
		for _, other := range names {
			if got := id.selects(t, daemonSets[other]); got != (other == name) {
				t.Errorf("%s's grant identity %+v takes %s's pods: %v", name, id, other, got)
			}
		}
	}
}
