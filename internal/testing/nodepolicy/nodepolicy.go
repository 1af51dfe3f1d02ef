// Package nodepolicy gives the sample plugins' tests the node policy
// shipped with their overlays, deploy/policy/policy.yaml (see
// deploy/README.md, "The node's policy"), and the configurations of the
// overlays, so that each plugin's tests can run its real code as deployed
// and check its adjustments against the grant the node gives it.
package nodepolicy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
)

// InstalledPath is where the node's runtime reads the policy: the name
// [Load] gives the shipped file, so that violations name the rule as the
// runtime's log would.
const InstalledPath = "/etc/nri/policy.yaml"

// ShippedPath is the shipped node policy, relative to the repository's
// root.
const ShippedPath = "deploy/policy/policy.yaml"

// root returns the repository's root: the first directory up from the
// test's working directory (its package's) with a go.mod and a deploy
// directory.
func root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, ShippedPath)); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no %s above the test's directory", ShippedPath)
		}
		dir = parent
	}
}

// read returns the content of a file of the repository.
func read(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Load parses the shipped node policy, named [InstalledPath].
func Load(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(InstalledPath, read(t, ShippedPath))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Grant returns the shipped node policy's grant of the plugin name, as
// written: the entry of grants whose plugins are [name].
func Grant(t testing.TB, name string) policy.GrantSpec {
	t.Helper()
	var doc policy.Document
	dec := yaml.NewDecoder(bytes.NewReader(read(t, ShippedPath)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc.Grants {
		if slices.Equal(g.Plugins, []string{name}) {
			return g
		}
	}
	t.Fatalf("%s has no grant of %s", ShippedPath, name)
	return policy.GrantSpec{}
}

// OverlayConfig returns the plugin configuration of the overlay name,
// deploy/kustomize/overlays/NAME/config.yaml: what its DaemonSet runs
// with.
func OverlayConfig(t testing.TB, name string) string {
	t.Helper()
	return string(read(t, filepath.Join("deploy", "kustomize", "overlays", name, "config.yaml")))
}

// Observer is a sample plugin that only watches: what [CheckObserver]
// drives.
type Observer interface {
	CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error)
	UpdateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, error)
}

// CheckObserver checks an observer against its shipped grant: the grant
// allows no change and no where, and the plugin's answers to
// CreateContainer and UpdateContainer change nothing, which the grant
// allows.
func CheckObserver(t *testing.T, name string, p Observer) {
	t.Helper()
	grant := Load(t).GrantFor("10", name)
	if !grant.Capabilities().Empty() || Grant(t, name).Where != nil {
		t.Errorf("the shipped grant of an observer allows %s", grant.Capabilities())
	}
	pod := &api.PodSandbox{Id: "pod-1", Name: "p", Namespace: "default"}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c", Env: []string{"A=1"}}
	adj, updates, err := p.CreateContainer(context.Background(), pod, ctr)
	if err != nil || updates != nil {
		t.Fatalf("CreateContainer: %v, %v", updates, err)
	}
	if vs := grant.CheckAdjustment(pod, ctr, adj); vs != nil {
		t.Errorf("the shipped grant refuses the plugin's adjustment: %v", vs)
	}
	updates, err = p.UpdateContainer(context.Background(), pod, ctr, &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1 << 30)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		if vs := grant.CheckUpdate(pod, ctr, u); vs != nil {
			t.Errorf("the shipped grant refuses the plugin's update: %v", vs)
		}
	}
	if len(updates) != 0 {
		t.Errorf("an observer updated containers: %v", updates)
	}
}
