package ocispec

import (
	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// classEdit is the resolved outcome of block I/O and RDT class requests.
type classEdit struct {
	setBlockIO, setRdt bool
	blockIO            *rspec.LinuxBlockIO
	rdt                *rspec.LinuxIntelRdt
}

// resolveClasses resolves the block I/O and RDT classes of r with the
// runtime's resolvers. An empty class clears the setting; a class the
// runtime has no resolver for is ignored.
func resolveClasses(cfg *config, r *api.LinuxResources) (classEdit, error) {
	var e classEdit
	if c := r.GetBlockioClass(); c != nil {
		switch {
		case c.GetValue() == "":
			e.setBlockIO = true
		case cfg.blockIO != nil:
			b, err := cfg.blockIO(c.GetValue())
			if err != nil {
				return e, fieldErr("linux.resources.blockio_class", err)
			}
			e.setBlockIO, e.blockIO = true, b
		}
	}
	if c := r.GetRdtClass(); c != nil {
		switch {
		case c.GetValue() == "":
			e.setRdt = true
		case cfg.rdt != nil:
			rdt, err := cfg.rdt(c.GetValue())
			if err != nil {
				return e, fieldErr("linux.resources.rdt_class", err)
			}
			e.setRdt, e.rdt = true, rdt
		}
	}
	return e, nil
}

// apply stores the resolved classes in the spec.
func (e classEdit) apply(s *rspec.Spec) {
	if e.setBlockIO {
		ensureResources(s).BlockIO = e.blockIO
	}
	if e.setRdt {
		ensureLinux(s).IntelRdt = e.rdt
	}
}
