package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeHelmLines returns the helm command lines of deploy/README.md's
// section "Helm": the first fenced sh block after its heading, with
// continuation lines joined and trailing comments dropped, each split
// into words (the lines have no quoting).
func readmeHelmLines(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.repo, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Helm\n")
	if !ok {
		t.Fatal("deploy/README.md has no section \"## Helm\"")
	}
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		t.Fatal("deploy/README.md's section Helm has no fenced sh block")
	}
	var lines [][]string
	pending := ""
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		l := sc.Text()
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, "\\") {
			pending += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		l = pending + l
		pending = ""
		if l == "" {
			continue
		}
		words := strings.Fields(l)
		if words[0] != "helm" {
			t.Fatalf("deploy/README.md's Helm block has a line not running helm: %q", l)
		}
		lines = append(lines, words)
	}
	return lines
}

// helmCLI runs helm (the e2e module's helm.sh/helm/v3 command) with args
// in the cluster's namespaces, from the repository's root (the README's
// paths are relative to it), with the cluster's kubeconfig in KUBECONFIG.
func (n *node) helmCLI(args ...string) string {
	n.t.Helper()
	cmd := n.Command(n.ctx, env.repo, append([]string{env.helm}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.Kubeconfig, "HOME="+filepath.Join(n.Dir, "home"),
		"XDG_CACHE_HOME=", "XDG_CONFIG_HOME=", "XDG_DATA_HOME=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		n.t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// helmStatus returns the status of release in kube-system per `helm
// list`, or "" if there is none.
func (n *node) helmStatus(release string) string {
	n.t.Helper()
	var list []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Chart  string `json:"chart"`
	}
	if err := json.Unmarshal([]byte(n.helmCLI("list", "-n", pluginNS, "-a", "-o", "json")), &list); err != nil {
		n.t.Fatalf("decoding helm list: %v", err)
	}
	for _, r := range list {
		if r.Name == release {
			return r.Status + " " + r.Chart
		}
	}
	return ""
}

// helmREADME runs deploy/README.md's helm command lines, as written, with
// the helm command built from the e2e module's helm.sh/helm/v3, and
// checks what each does: an installed release is deployed and its plugin
// pod turns Ready (gpu-env's adjusts a pod requiring it with the chart's
// defaults); template renders without the cluster; uninstall leaves no
// object of the release. A line the test does not know fails it, so the
// README cannot change without the test.
func helmREADME(t *testing.T, n *node) {
	lines := readmeHelmLines(t)
	seen := map[string]bool{}
	version := strings.TrimSpace(n.helmCLI("version", "--short"))
	for _, words := range lines {
		line := strings.Join(words, " ")
		if len(words) < 3 {
			t.Fatalf("README line %q: too short", line)
		}
		verb, release := words[1], words[2]
		key := verb + " " + release
		seen[key] = true
		start := time.Now()
		out := n.helmCLI(words[1:]...)
		switch key {
		case "install gpu-env", "install logger":
			name := "nri-plugin-" + release
			if st := n.helmStatus(release); !strings.HasPrefix(st, "deployed nrikit-plugin-") {
				t.Fatalf("%s: release %s status %q, want deployed", line, release, st)
			}
			p := n.readyPod(pluginNS, "app.kubernetes.io/name="+name, 2*time.Minute)
			st := n.helmStatus(release)
			evidence(t, "README `%s` (helm %s): release %s %s; pod %s/%s Ready=true %s after, image %s",
				line, version, release, st, pluginNS, p.Metadata.Name, time.Since(start).Round(time.Millisecond), p.Status.ContainerStatuses[0].Image)
			if release == "gpu-env" {
				n.apply(strings.Replace(workloadPod("helm-cli-app"), "app: roll", "app: helm-cli-app", 1))
				app := n.readyPod(appNS, "app=helm-cli-app", 2*time.Minute)
				info := n.container(app)
				for key, want := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"} {
					if err := checkEnv(info, key, want); err != nil {
						t.Fatalf("pod %s: %v", app.Metadata.Name, err)
					}
				}
				evidence(t, "pod %s/%s (requires gpu-env) pid %d: spec and /proc/%d/environ have NVIDIA_VISIBLE_DEVICES=void, NVIDIA_DRIVER_CAPABILITIES=compute,utility (the chart's defaults)",
					appNS, app.Metadata.Name, info.Pid, info.Pid)
			}
		case "template gpu-env":
			for _, want := range []string{"kind: DaemonSet", "name: nri-plugin-gpu-env", "kind: ConfigMap", "kind: NetworkPolicy", "image: \"localhost/nrikit/gpu-env:dev\""} {
				if !strings.Contains(out, want) {
					t.Errorf("%s renders no %q:\n%s", line, want, out)
				}
			}
			evidence(t, "README `%s`: %d lines, %d objects (DaemonSet, ConfigMap, NetworkPolicy nri-plugin-gpu-env)", line,
				strings.Count(out, "\n"), strings.Count(out, "\nkind: "))
		case "uninstall gpu-env":
			n.noPods(pluginNS, pluginSelector, 2*time.Minute)
			left := n.kubectl("-n", pluginNS, "get", "daemonset,configmap,networkpolicy,secret", "-l", "app.kubernetes.io/instance="+release, "-o", "name")
			st := n.helmStatus(release)
			if left != "" || st != "" {
				t.Fatalf("after %s: objects left %q, release %q", line, left, st)
			}
			evidence(t, "README `%s`: release gone from helm list, no plugin pod, no DaemonSet, ConfigMap or NetworkPolicy of the release left (%s)",
				line, time.Since(start).Round(time.Millisecond))
		default:
			t.Fatalf("deploy/README.md's Helm block runs %q, which this test does not check", line)
		}
	}
	for _, want := range []string{"install gpu-env", "install logger", "template gpu-env", "uninstall gpu-env"} {
		if !seen[want] {
			t.Errorf("deploy/README.md's Helm block has no `helm %s ...` line", want)
		}
	}
}
