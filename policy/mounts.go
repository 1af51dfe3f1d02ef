package policy

import (
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// The rules of adjust.mounts. A path is what it says or it is refused: a
// destination, a removed destination and a bind source must be absolute
// and clean (no "." or ".." element, no repeated or trailing slash), as
// the patterns are matched on the string and the runtime would clean it
// afterwards. A mount's read-only state is the one its options end with
// when the OCI runtime applies them in order; a bind source is resolved
// on the host, as the kernel will resolve it, and must stay in the
// granted directory it is under.

// mountRules are the compiled rules of adjust.mounts.
type mountRules struct {
	sources      []sourceRule
	types        []string
	options      globList
	destinations globList // nil: any but the system paths
	remove       globList // nil: no mount may be removed
}

// sourceRule is a host directory that may be bind-mounted.
type sourceRule struct {
	path, slashed string // slashed: path + "/" ("/" for the root)
	readWrite     bool
}

// contains reports whether the clean path p is the rule's directory or
// under it, as strings.
func (s *sourceRule) contains(p string) bool { return p == s.path || strings.HasPrefix(p, s.slashed) }

// safeMountOptions are the mount options allowed when a grant does not
// list them: bind flavours, read-only or read-write, nosuid, nodev,
// noexec, access times, private or slave propagation. Shared
// propagation, which lets mounts made in the container appear on the
// host, is not among them, and neither is remount.
var safeMountOptions = []string{"bind", "rbind", "ro", "rro", "rw", "nosuid", "nodev", "noexec",
	"noatime", "nodiratime", "relatime", "private", "rprivate", "slave", "rslave"}

// systemPaths are the paths in the container that a mount may not cover
// (be at, under, or above) or remove unless the grant lists its
// destinations (or, to remove, mounts.remove): what the runtime mounts
// itself (procfs, sysfs, /dev and what it holds) and the files and
// directories the kubelet and the runtime set up for the container (its
// users and groups, its name and resolver, its service account's
// credentials). docs/policy.md lists them.
var systemPaths = []string{"/proc", "/sys", "/dev", "/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
	"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/secrets", "/var/run/secrets"}

// coveredSystemPath returns the system path a mount at dest (absolute,
// clean) would cover, or "".
func coveredSystemPath(dest string) string {
	for _, s := range systemPaths {
		if within(dest, s) || within(s, dest) {
			return s
		}
	}
	return ""
}

// within reports whether the clean absolute path p is dir or under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || (strings.HasPrefix(p, dir) && p[len(dir)] == '/')
}

// mounts compiles adjust.mounts.
func (c *compiler) mounts(path []any, m *MountsSpec) mountRules {
	var r mountRules
	for i, s := range m.Sources {
		if !absClean(s.Path) {
			c.errorf(at(path, "sources", i, "path"), "%q is not an absolute clean path (such as /srv/models)", s.Path)
			continue
		}
		slashed := s.Path + "/"
		if s.Path == "/" {
			slashed = "/"
		}
		r.sources = append(r.sources, sourceRule{path: s.Path, slashed: slashed, readWrite: s.ReadWrite})
	}
	for i, t := range m.Types {
		if t == "" || t == "bind" || t == "rbind" || strings.ContainsAny(t, " \t/") {
			c.errorf(at(path, "types", i), "type %q: want a file system type other than bind (bind mounts are allowed by sources)", t)
		}
	}
	r.types = m.Types
	if m.Options != nil {
		r.options = c.globs(at(path, "options"), m.Options)
	} else {
		r.options = c.globs(nil, safeMountOptions)
	}
	if m.Destinations != nil {
		r.destinations = c.globs(at(path, "destinations"), m.Destinations)
	}
	if m.Remove != nil {
		r.remove = c.globs(at(path, "remove"), m.Remove)
	}
	return r
}

// mountState is what a mount's options do, applied in order as runc
// (libcontainer/specconv, v1.3.0) applies them: bind and rbind make it a
// bind mount (rbind a recursive one), ro and rw set and clear MS_RDONLY
// (the last one wins), rro and rrw set and clear the recursive read-only
// attribute (the last one wins; it is applied after MS_RDONLY, with
// mount_setattr), remount makes it a change of the mount already at the
// destination. crun reads the options the same way.
type mountState struct {
	bind, remount, rdonly bool
	rec                   int8 // recursive read-only: 1 set (rro), -1 cleared (rrw), 0 neither
}

// applyOptions returns the state of a mount of type typ with options, in
// order.
func applyOptions(typ string, options []string) mountState {
	st := mountState{bind: typ == "bind" || typ == "rbind"}
	for _, o := range options {
		switch o {
		case "bind", "rbind":
			st.bind = true
		case "ro":
			st.rdonly = true
		case "rw":
			st.rdonly = false
		case "rro":
			st.rec = 1
		case "rrw":
			st.rec = -1
		case "remount":
			st.remount = true
		}
	}
	return st
}

// readOnly reports whether the mount itself ends read-only: the
// recursive attribute, applied last, decides if it is given, else
// MS_RDONLY. (The mounts under a recursive bind's source keep their own
// state unless rro is given; docs/policy.md says so.)
func (st mountState) readOnly() bool { return st.rec > 0 || (st.rec == 0 && st.rdonly) }

// checkMount returns why a mount (or its removal) is refused, or "".
func (g *Grant) checkMount(m *api.Mount) string {
	if !g.caps.Has(capability.Mounts) {
		return notGranted
	}
	r := &g.adjust.mounts
	dest, removed := m.IsMarkedForRemoval()
	switch {
	case !absClean(dest):
		return "destination is not an absolute clean path"
	case removed && r.remove == nil:
		return "removing mounts not allowed (no adjust.mounts.remove)"
	case removed && !r.remove.match(dest):
		return "removing the mount at this destination not allowed"
	case removed:
		return ""
	case r.destinations != nil && !r.destinations.match(dest):
		return "destination not allowed"
	case r.destinations == nil:
		if s := coveredSystemPath(dest); s != "" {
			return fmt.Sprintf("destination covers the system path %s (allowed only by adjust.mounts.destinations)", s)
		}
	}
	for _, o := range m.GetOptions() {
		if !r.options.match(o) {
			return fmt.Sprintf("option %s not allowed", quote(o))
		}
	}
	st := applyOptions(m.GetType(), m.GetOptions())
	if st.remount && !st.readOnly() {
		return "remount that ends read-write: a remount changes the mount already at the destination, and may only make it read-only"
	}
	if !st.bind {
		for _, t := range r.types {
			if t == m.GetType() {
				return ""
			}
		}
		return fmt.Sprintf("type %s not allowed", quote(m.GetType()))
	}
	return r.checkSource(m.GetSource(), !st.readOnly())
}

// checkSource returns why a bind mount of src (read-write if rw) is
// refused, or "": src must be absolute and clean, under a granted
// directory that allows the access, and resolved on the host it must
// stay in that directory.
func (r *mountRules) checkSource(src string, rw bool) string {
	if !absClean(src) {
		return fmt.Sprintf("source %s is not an absolute clean path", quote(src))
	}
	reason := ""
	for i := range r.sources {
		s := &r.sources[i]
		if !s.contains(src) {
			continue
		}
		if rw && !s.readWrite {
			if reason == "" {
				reason = "read-write bind mount of a source allowed read-only (its options must end read-only: ro or rro, and no later rw or rrw)"
			}
			continue
		}
		if r := s.resolve(src); r != "" {
			reason = r
			continue
		}
		return ""
	}
	if reason != "" {
		return reason
	}
	return fmt.Sprintf("source %s is not under an allowed source", quote(src))
}

// resolve returns why src, a path under the rule's directory, leaves it
// once looked up on the host, or "": the directory is looked up, then
// src from it, as the kernel will look src up (see lookupHost).
func (s *sourceRule) resolve(src string) string {
	dir, missing, err := lookupHost(s.path, 0, "/", false)
	if err != nil {
		return fmt.Sprintf("source directory %s cannot be looked up on the host: %v", quote(s.path), err)
	}
	n := len(s.path)
	if s.path == "/" {
		n = 0
	}
	real, _, err := lookupHost(src, n, dir, missing)
	if err != nil {
		return fmt.Sprintf("source %s cannot be looked up on the host: %v", quote(src), err)
	}
	if !within(real, dir) {
		return fmt.Sprintf("source %s resolves to %s on the host, outside %s", quote(src), quote(real), quote(s.path))
	}
	return ""
}
