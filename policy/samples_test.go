package policy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The shipped node policy and the overlays whose grants it holds, relative
// to the package's directory.
const (
	shippedPolicy = "../deploy/policy/policy.yaml"
	kustomizeDir  = "../deploy/kustomize"
)

// decodeDocument decodes a policy file as written, strictly, after Parse
// accepted it.
func decodeDocument(t *testing.T, file string) (*Policy, *Document) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(file, data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var doc Document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p, &doc
}

// TestShippedNodePolicy checks the node policy shipped with the sample
// plugins' overlays (deploy/README.md, "The node's policy"): it is
// testdata/samples.yaml (and so docs/policy.md's), it has no default
// grant, and it holds one grant per overlay, equal to the grant of the
// overlay's own policy.yaml and of its release overlay's, each a valid
// policy file of that one grant.
func TestShippedNodePolicy(t *testing.T) {
	shipped, err := os.ReadFile(shippedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tested, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, tested) {
		t.Errorf("%s differs from testdata/samples.yaml, the sample policy the tests check and docs/policy.md shows", shippedPolicy)
	}
	node, doc := decodeDocument(t, shippedPolicy)
	if doc.Default != nil || len(doc.Required) != 0 {
		t.Errorf("the node policy has a default grant (%+v) or required plugins (%v): an unknown plugin must get nothing", doc.Default, doc.Required)
	}
	if g := node.GrantFor("99", "unknown"); !g.Capabilities().Empty() || g.Where() != nil {
		t.Errorf("a plugin the node policy does not name gets %s (%v)", g.Capabilities(), g)
	}

	entries, err := os.ReadDir(filepath.Join(kustomizeDir, "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no overlays")
	}
	var granted []string
	for i, g := range doc.Grants {
		if len(g.Plugins) != 1 {
			t.Errorf("grants[%d] names plugins %v, want one overlay's plugin", i, g.Plugins)
			continue
		}
		granted = append(granted, g.Plugins[0])
	}
	if !slices.Equal(slices.Sorted(slices.Values(granted)), names) {
		t.Errorf("the node policy grants %v, the overlays are %v", granted, names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(kustomizeDir, "overlays", name, "policy.yaml")
			own, ownDoc := decodeDocument(t, file)
			if ownDoc.Default != nil || len(ownDoc.Required) != 0 || len(ownDoc.Grants) != 1 || !slices.Equal(ownDoc.Grants[0].Plugins, []string{name}) {
				t.Fatalf("%s: want one grant, of %s, and no default or required plugins: %+v", file, name, ownDoc)
			}
			i := slices.Index(granted, name)
			if i < 0 {
				t.Fatalf("the node policy has no grant of %s", name)
			}
			if !reflect.DeepEqual(ownDoc.Grants[0], doc.Grants[i]) {
				t.Errorf("%s's grant differs from the node policy's grants[%d]:\n%+v\n%+v", file, i, ownDoc.Grants[0], doc.Grants[i])
			}
			// The node policy resolves the plugin to that grant, whatever
			// its index, and both allow the same.
			g, ownG := node.GrantFor("42", name), own.GrantFor("42", name)
			_, what, _ := strings.Cut(g.Summary(), " plugins=")
			_, ownWhat, _ := strings.Cut(ownG.Summary(), " plugins=")
			if !strings.HasSuffix(g.String(), fmt.Sprintf(": grants[%d]", i)) || g.Capabilities() != ownG.Capabilities() || what == "" || what != ownWhat {
				t.Errorf("the node policy gives %s %s (%s), its own file %s (%s)", name, g, g.Summary(), ownG, ownG.Summary())
			}
			release := filepath.Join(kustomizeDir, "release", name, "policy.yaml")
			data, err := os.ReadFile(release)
			if err != nil {
				t.Fatalf("the release overlay has no grant: %v", err)
			}
			if want, _ := os.ReadFile(file); !bytes.Equal(data, want) {
				t.Errorf("%s differs from %s", release, file)
			}
		})
	}
}
