package manifests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// attack is what a pod creator could ask an annotation plugin for to take
// the node, and what shows that the plugin gave it.
type attack struct {
	// annotations ask for it, container by container (KEY/container.NAME
	// keys are written for each container of containers).
	annotations map[string]string
	// containers are the attacking pod's containers, one per request
	// (container-specific annotations).
	containers []string
	// granted are texts of `nri run`'s output that show an adjustment
	// granting it.
	granted []string
}

// attacks are, per annotation plugin, requests its overlay's shipped
// configuration must refuse in the namespaces it serves and ignore in the
// others.
var attacks = map[string]attack{
	// The host-root attack: the host's root file system read-write, and
	// its first disk.
	"device-injector": {
		annotations: map[string]string{
			"mounts.noderesource.dev/container.mount":   "- {source: /, destination: /host, type: bind, options: [rbind, rw]}\n",
			"devices.noderesource.dev/container.device": "- {path: /dev/sda, type: b, major: 8, minor: 0}\n",
		},
		containers: []string{"mount", "device"},
		granted:    []string{"mounts[/host]", "linux.devices[/dev/sda]"},
	},
	// Every GPU of the node.
	"gpu-env": {
		annotations: map[string]string{"gpu-env.nrikit.dev/visible-devices/container.all": "all"},
		containers:  []string{"all"},
		granted:     []string{"NVIDIA_VISIBLE_DEVICES] = all"},
	},
	// Unlimited locked memory and open files.
	"ulimit-adjuster": {
		annotations: map[string]string{"ulimits.noderesource.dev/container.limits": "- {type: memlock, soft: 18446744073709551615, hard: 18446744073709551615}\n- {type: nofile, soft: 1073741816, hard: 1073741816}\n"},
		containers:  []string{"limits"},
		granted:     []string{"rlimits[RLIMIT_MEMLOCK]", "rlimits[RLIMIT_NOFILE]"},
	},
}

// TestShippedConfigurationsRefuseAttacks plays, for each annotation
// plugin's overlay, a scenario in nrikit's simulator (`nri run`, the
// plugin running as `nri plugin NAME` with the overlay's ConfigMap
// configuration, as the runtime would send it): a pod in a namespace the
// configuration serves asks for the attack, and each container's creation
// must fail with the plugin's refusal; the same pod in namespace default
// must be left alone. The simulator checks the expected errors and exits
// 1 otherwise.
func TestShippedConfigurationsRefuseAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/nri")
	}
	for _, name := range annotationPlugins {
		if _, ok := attacks[name]; !ok {
			t.Errorf("no attack on %s", name)
		}
	}
	nri := buildNRI(t)
	for _, name := range annotationPlugins {
		t.Run(name, func(t *testing.T) {
			r := render(t, filepath.Join(kustomizeDir, "overlays", name))
			config := overlayConfigText(t, r)
			ns := shippedNamespaces(t, config)
			if len(ns) == 0 {
				t.Fatal("the configuration names no namespace")
			}
			c := &r.DaemonSets[0].Spec.Template.Spec.Containers[0]
			idx := resolveEnv(t, c, parseArgs(t, c.Args)["idx"], r.ConfigMaps)
			scenario := attackScenario(t, name, idx, config, ns[0], attacks[name])
			file := filepath.Join(t.TempDir(), "attack.yaml")
			if err := os.WriteFile(file, scenario, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, nri, "run", file)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("nri run: %v: the shipped configuration does not refuse the attack in namespace %s, or ignore it elsewhere:\n%s\nscenario:\n%s", err, ns[0], out.String(), scenario)
			}
			for _, g := range attacks[name].granted {
				if strings.Contains(out.String(), g) {
					t.Errorf("the output shows %q granted:\n%s", g, out.String())
				}
			}
			if !strings.Contains(out.String(), "every outcome as expected") {
				t.Errorf("nri run did not confirm the outcomes:\n%s", out.String())
			}
		})
	}
}

// attackScenario writes the scenario: plugin name at index idx with
// config; pod "attacker" in namespace ns asking for a, each container's
// creation expecting the plugin's refusal; pod "outsider" in namespace
// default asking for the same, its creations expecting success.
func attackScenario(t *testing.T, name, idx, config, ns string, a attack) []byte {
	t.Helper()
	type container struct {
		Name  string `json:"name"`
		Pod   string `json:"pod"`
		Image string `json:"image"`
	}
	type step map[string]string
	pod := func(podName, namespace string) map[string]any {
		return map[string]any{"name": podName, "namespace": namespace, "labels": map[string]string{"accel": "gpu"}, "annotations": a.annotations}
	}
	var containers []container
	steps := []step{{"runPod": "attacker"}, {"runPod": "outsider"}}
	for _, c := range a.containers {
		containers = append(containers, container{Name: c, Pod: "attacker", Image: "attacker:1"})
		steps = append(steps, step{"createContainer": c, "expectError": "refused"})
	}
	// The outsider's containers have the attacker's names: the
	// container-specific annotations apply to them too.
	for _, c := range a.containers {
		containers = append(containers, container{Name: c + "-outside", Pod: "outsider", Image: "attacker:1"})
	}
	outsider := pod("outsider", "default")
	ann := map[string]string{}
	for k, v := range a.annotations {
		if key, ctr, ok := strings.Cut(k, "/container."); ok {
			k = key + "/container." + ctr + "-outside"
		}
		ann[k] = v
	}
	outsider["annotations"] = ann
	for _, c := range a.containers {
		steps = append(steps, step{"createContainer": c + "-outside"})
	}
	doc, err := yaml.Marshal(map[string]any{
		"name":        "attack-" + name,
		"description": "a pod asks " + name + " for the node",
		"pods":        []any{pod("attacker", ns), outsider},
		"containers":  containers,
		"plugins":     []any{map[string]string{"name": name, "index": idx, "config": config}},
		"steps":       steps,
	})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// buildNRI builds cmd/nri from the repository root, as the end-to-end
// suite does, and returns its path. Static and -trimpath, as the plugins
// of TestPluginsAcceptTheirArgs and the nri of TestPluginOutsideRepository
// (installed from another directory) are built: the three share the
// compiled packages.
func buildNRI(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "nri")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	goCmd := goCommand()
	build := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-o", bin, "./cmd/nri")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nri: %v\n%s", err, out)
	}
	return bin
}
