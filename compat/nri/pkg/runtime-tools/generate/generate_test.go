package generate

import (
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

type specGen struct{ spec *rspec.Spec }

func (g *specGen) Spec() *rspec.Spec { return g.spec }

// TestAdjust: the adjustment lands in the generator's spec, through the
// resolvers given as options.
func TestAdjust(t *testing.T) {
	g := &specGen{spec: &rspec.Spec{Process: &rspec.Process{}, Linux: &rspec.Linux{}}}
	var resolved string
	gen := SpecGenerator(g, WithRdtResolver(func(class string) (*rspec.LinuxIntelRdt, error) {
		resolved = class
		return &rspec.LinuxIntelRdt{ClosID: class}, nil
	}))
	adj := &api.ContainerAdjustment{
		Annotations: map[string]string{"a": "b"},
		Env:         []*api.KeyValue{{Key: "X", Value: "1"}},
		Linux:       &api.LinuxContainerAdjustment{Resources: &api.LinuxResources{RdtClass: api.String("gold")}},
	}
	if err := gen.Adjust(adj); err != nil {
		t.Fatal(err)
	}
	if g.spec.Annotations["a"] != "b" || len(g.spec.Process.Env) != 1 || g.spec.Process.Env[0] != "X=1" {
		t.Errorf("spec not adjusted: %+v %+v", g.spec.Annotations, g.spec.Process.Env)
	}
	if resolved != "gold" || g.spec.Linux.IntelRdt == nil || g.spec.Linux.IntelRdt.ClosID != "gold" {
		t.Errorf("RDT class %q resolved to %+v", resolved, g.spec.Linux.IntelRdt)
	}
	if err := gen.Adjust(nil); err != nil {
		t.Errorf("Adjust(nil): %v", err)
	}
}
