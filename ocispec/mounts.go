package ocispec

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// Root propagation modes a mount can require.
const (
	propShared  = "rshared"
	propSlave   = "rslave"
	propPrivate = "rprivate"
)

// mountOp is one validated mount adjustment: remove the mount at dest, and
// unless remove is set, add mnt in its place.
type mountOp struct {
	dest   string
	remove bool
	mnt    rspec.Mount
	prop   string
}

// planMounts replaces mounts by destination and removes them ("-/dest").
// Afterwards all mounts are sorted parents first.
func planMounts(cfg *config, mounts []*api.Mount) (step, error) {
	if len(mounts) == 0 {
		return nil, nil
	}
	ops := make([]mountOp, 0, len(mounts))
	for i, m := range mounts {
		dest, marked := m.IsMarkedForRemoval()
		field := fmt.Sprintf("mounts[%d]", i)
		if dest == "" {
			return nil, invalidf(field+".destination", "empty mount destination")
		}
		op := mountOp{dest: dest, remove: marked}
		if !marked {
			op.mnt, op.prop = mountToOCI(m)
			if err := checkPropagation(cfg, field, op.mnt.Source, op.prop); err != nil {
				return nil, err
			}
		}
		ops = append(ops, op)
	}
	return func(s *rspec.Spec) error {
		for _, op := range ops {
			s.Mounts = slices.DeleteFunc(s.Mounts, func(m rspec.Mount) bool {
				return sameDestination(m.Destination, op.dest)
			})
			if op.remove {
				continue
			}
			adjustRootPropagation(s, op.prop)
			s.Mounts = append(s.Mounts, op.mnt)
		}
		sortMounts(s.Mounts)
		return nil
	}, nil
}

// checkPropagation runs the runtime's propagation checker for a mount that
// needs shared or slave propagation on the host.
func checkPropagation(cfg *config, field, source, prop string) error {
	if cfg.checkPropagation == nil || (prop != propShared && prop != propSlave) {
		return nil
	}
	return fieldErr(field+".source", cfg.checkPropagation(source, prop))
}

// adjustRootPropagation makes the root propagation compatible with a mount
// requesting prop: rshared needs an rshared root, rslave an rshared or
// rslave one.
func adjustRootPropagation(s *rspec.Spec, prop string) {
	switch prop {
	case propShared:
		ensureLinux(s).RootfsPropagation = propShared
	case propSlave:
		l := ensureLinux(s)
		if l.RootfsPropagation != propShared && l.RootfsPropagation != propSlave {
			l.RootfsPropagation = propSlave
		}
	}
}

// sameDestination reports whether two mount destinations name the same path.
func sameDestination(a, b string) bool {
	return a == b || path.Clean(a) == path.Clean(b)
}

// mountDepth is the number of path separators in a cleaned destination.
func mountDepth(dest string) int {
	return strings.Count(path.Clean(dest), "/")
}

// sortMounts orders mounts by destination depth, then destination, so that
// a parent is mounted before its children. Equal destinations keep their
// relative order.
func sortMounts(mounts []rspec.Mount) {
	slices.SortStableFunc(mounts, func(a, b rspec.Mount) int {
		return cmp.Or(cmp.Compare(mountDepth(a.Destination), mountDepth(b.Destination)),
			strings.Compare(a.Destination, b.Destination))
	})
}

// mountToOCI converts a protocol mount and returns the last propagation
// option among its options ("" if none).
func mountToOCI(m *api.Mount) (rspec.Mount, string) {
	o := rspec.Mount{
		Destination: m.GetDestination(),
		Type:        m.GetType(),
		Source:      m.GetSource(),
		Options:     slices.Clone(m.GetOptions()),
	}
	prop := ""
	for _, opt := range o.Options {
		switch opt {
		case propShared, propSlave, propPrivate:
			prop = opt
		}
	}
	return o, prop
}

// mountsFromOCI converts the spec's mounts.
func mountsFromOCI(o []rspec.Mount) []*api.Mount {
	var out []*api.Mount
	for _, m := range o {
		out = append(out, &api.Mount{
			Destination: m.Destination,
			Type:        m.Type,
			Source:      m.Source,
			Options:     slices.Clone(m.Options),
		})
	}
	return out
}
