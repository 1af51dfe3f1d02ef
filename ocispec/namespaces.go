package ocispec

import (
	"fmt"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// knownNamespace reports whether t is a Linux namespace type of the OCI
// spec.
func knownNamespace(t rspec.LinuxNamespaceType) bool {
	switch t {
	case rspec.PIDNamespace, rspec.NetworkNamespace, rspec.MountNamespace, rspec.IPCNamespace,
		rspec.UTSNamespace, rspec.UserNamespace, rspec.CgroupNamespace, rspec.TimeNamespace:
		return true
	}
	return false
}

// nsOp is one validated namespace adjustment.
type nsOp struct {
	ns     rspec.LinuxNamespace
	remove bool
}

// planNamespaces adds or replaces namespaces by type and removes them
// ("-type").
func planNamespaces(namespaces []*api.LinuxNamespace) (step, error) {
	var ops []nsOp
	for i, n := range namespaces {
		if n == nil {
			continue
		}
		t, marked := n.IsMarkedForRemoval()
		if !knownNamespace(rspec.LinuxNamespaceType(t)) {
			return nil, invalidf(fmt.Sprintf("linux.namespaces[%d].type", i), "unknown namespace type %q", n.GetType())
		}
		ops = append(ops, nsOp{ns: rspec.LinuxNamespace{Type: rspec.LinuxNamespaceType(t), Path: n.GetPath()}, remove: marked})
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return func(s *rspec.Spec) error {
		l := ensureLinux(s)
		for _, op := range ops {
			i := slices.IndexFunc(l.Namespaces, func(n rspec.LinuxNamespace) bool { return n.Type == op.ns.Type })
			switch {
			case op.remove:
				l.Namespaces = slices.DeleteFunc(l.Namespaces, func(n rspec.LinuxNamespace) bool { return n.Type == op.ns.Type })
			case i >= 0:
				l.Namespaces[i] = op.ns
			default:
				l.Namespaces = append(l.Namespaces, op.ns)
			}
		}
		return nil
	}, nil
}

// namespacesFromOCI converts the spec's namespaces.
func namespacesFromOCI(o []rspec.LinuxNamespace) []*api.LinuxNamespace {
	var out []*api.LinuxNamespace
	for _, n := range o {
		out = append(out, &api.LinuxNamespace{Type: string(n.Type), Path: n.Path})
	}
	return out
}
