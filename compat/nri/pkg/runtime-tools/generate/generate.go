// Package generate is upstream's pkg/runtime-tools/generate on nrikit:
// it applies a container adjustment to an OCI runtime spec, through
// nrikit's ocispec.Apply.
//
// Upstream edits the spec through the methods of the runtime's spec
// generator (UnderlyingGenerator); nrikit edits the spec the generator
// returns from Spec() directly, so the generator needs nothing else, and
// what it does in its other methods (containerd's sorts mounts in
// AddMount) is not done. The Adjust* methods of upstream's Generator,
// which no runtime calls on their own, are not provided: Adjust is.
package generate

import (
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/ocispec"
)

// UnlimitedPidsLimit is the pids limit that means no limit.
const UnlimitedPidsLimit = -1

// UnderlyingGenerator is the runtime's spec generator: here only the spec
// it holds is used.
type UnderlyingGenerator interface {
	// Spec returns the spec to adjust, modified in place.
	Spec() *rspec.Spec
}

// GeneratorOption configures a Generator.
type GeneratorOption func(*Generator)

// Generator applies adjustments to the spec of its UnderlyingGenerator.
type Generator struct {
	UnderlyingGenerator
	opts []ocispec.Option
}

// SpecGenerator returns a Generator adjusting gg's spec.
func SpecGenerator(gg UnderlyingGenerator, opts ...GeneratorOption) *Generator {
	g := &Generator{UnderlyingGenerator: gg}
	for _, o := range opts {
		o(g)
	}
	return g
}

func (g *Generator) add(o ocispec.Option) { g.opts = append(g.opts, o) }

// WithLabelFilter is accepted for upstream's API; labels are not part of
// an OCI spec, so it has no effect.
func WithLabelFilter(func(map[string]string) (map[string]string, error)) GeneratorOption {
	return func(*Generator) {}
}

// WithAnnotationFilter filters the annotations an adjustment sets.
func WithAnnotationFilter(fn func(map[string]string) (map[string]string, error)) GeneratorOption {
	return func(g *Generator) { g.add(ocispec.WithAnnotationFilter(fn)) }
}

// WithBlockIOResolver resolves block I/O class names.
func WithBlockIOResolver(fn func(string) (*rspec.LinuxBlockIO, error)) GeneratorOption {
	return func(g *Generator) { g.add(ocispec.WithBlockIOClassResolver(fn)) }
}

// WithRdtResolver resolves RDT class names.
func WithRdtResolver(fn func(string) (*rspec.LinuxIntelRdt, error)) GeneratorOption {
	return func(g *Generator) { g.add(ocispec.WithRDTClassResolver(fn)) }
}

// WithResourceChecker checks (and may change) the adjusted resources.
func WithResourceChecker(fn func(*rspec.LinuxResources) error) GeneratorOption {
	return func(g *Generator) { g.add(ocispec.WithCheckResources(fn)) }
}

// WithCDIDeviceInjector injects CDI devices into the spec.
func WithCDIDeviceInjector(fn func(*rspec.Spec, []string) error) GeneratorOption {
	return func(g *Generator) { g.add(ocispec.WithCDIDeviceInjector(fn)) }
}

// Adjust applies adjust to the generator's spec.
func (g *Generator) Adjust(adjust *api.ContainerAdjustment) error {
	if adjust == nil {
		return nil
	}
	spec := g.Spec()
	if spec == nil {
		return fmt.Errorf("adjusting container: the spec generator holds no spec")
	}
	if err := ocispec.Apply(spec, adjust, g.opts...); err != nil {
		return fmt.Errorf("adjusting container: %w", err)
	}
	return nil
}
