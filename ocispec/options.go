package ocispec

import (
	"errors"
	"fmt"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
)

// Option configures Apply and ApplyUpdate.
type Option func(*config) error

// config holds the runtime's callbacks.
type config struct {
	blockIO           func(class string) (*rspec.LinuxBlockIO, error)
	rdt               func(class string) (*rspec.LinuxIntelRdt, error)
	checkResources    func(*rspec.LinuxResources) error
	injectCDI         func(spec *rspec.Spec, devices []string) error
	filterAnnotations func(map[string]string) (map[string]string, error)
	filterSysctl      func(map[string]string) (map[string]string, error)
	checkPropagation  func(source, propagation string) error
}

var errNilCallback = errors.New("nil callback")

// newConfig applies opts to a fresh config.
func newConfig(opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, fmt.Errorf("ocispec option: %w", err)
		}
	}
	return c, nil
}

// nilCallback is the error of an option given a nil function.
func nilCallback(option string) error {
	return fmt.Errorf("%s: %w", option, errNilCallback)
}

// WithBlockIOClassResolver sets the function that turns a block I/O class
// name into the spec's linux.resources.blockIO. Without it, block I/O
// classes in adjustments and updates are ignored.
func WithBlockIOClassResolver(fn func(class string) (*rspec.LinuxBlockIO, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithBlockIOClassResolver")
		}
		c.blockIO = fn
		return nil
	}
}

// WithRDTClassResolver sets the function that turns an RDT class name into
// the spec's linux.intelRdt. Without it, RDT classes in adjustments and
// updates are ignored.
func WithRDTClassResolver(fn func(class string) (*rspec.LinuxIntelRdt, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithRDTClassResolver")
		}
		c.rdt = fn
		return nil
	}
}

// WithCheckResources sets a function called with the spec's resources
// after they were adjusted or updated; an error fails Apply or ApplyUpdate.
func WithCheckResources(fn func(*rspec.LinuxResources) error) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithCheckResources")
		}
		c.checkResources = fn
		return nil
	}
}

// WithCDIDeviceInjector sets the runtime's function that resolves the
// fully-qualified CDI device names of an adjustment and injects the
// devices into the spec. Without it, Apply records the names in the
// CDIAnnotationKey annotation.
func WithCDIDeviceInjector(fn func(spec *rspec.Spec, devices []string) error) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithCDIDeviceInjector")
		}
		c.injectCDI = fn
		return nil
	}
}

// WithAnnotationFilter sets a function that filters (or rejects, by
// returning an error) the annotations of an adjustment, removal markers
// included, before they are applied.
func WithAnnotationFilter(fn func(map[string]string) (map[string]string, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithAnnotationFilter")
		}
		c.filterAnnotations = fn
		return nil
	}
}

// WithSysctlFilter sets a function that filters (or rejects) the sysctls
// of an adjustment, removal markers included, before they are applied.
func WithSysctlFilter(fn func(map[string]string) (map[string]string, error)) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithSysctlFilter")
		}
		c.filterSysctl = fn
		return nil
	}
}

// WithPropagationChecker sets a function that verifies that the host
// source of a mount requesting "rshared" or "rslave" propagation supports
// it (upstream checks the host's mount table). It is called with the
// mount's source and the requested propagation.
func WithPropagationChecker(fn func(source, propagation string) error) Option {
	return func(c *config) error {
		if fn == nil {
			return nilCallback("WithPropagationChecker")
		}
		c.checkPropagation = fn
		return nil
	}
}
