package differ

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/ocispec"
)

// Change is one field that differs between two views of a container.
type Change struct {
	// Change is the field's path, such as "env[FOO]", "mounts[/data]",
	// "linux.resources.memory.limit" (see ocispec.Fields), the kind of
	// change, and the values ("" when absent).
	ocispec.Change
	// Runtime, if not empty, says why the differ takes the change for the
	// runtime's own doing rather than a plugin's (see [Runtime]).
	Runtime string
}

// String formats the change as `path: old -> new`, followed by the
// reason in parentheses for a change of the runtime's.
func (c Change) String() string {
	show := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	s := fmt.Sprintf("%s: %s -> %s", c.Path, show(c.Old), show(c.New))
	if c.Runtime != "" {
		s += " (" + c.Runtime + ")"
	}
	return s
}

// lifecycle are the container fields that change on their own, without
// any plugin's doing.
func lifecycle(path string) bool {
	return slices.Contains([]string{"state", "pid", "created_at", "started_at", "finished_at", "exit_code", "status_reason", "status_message"}, path)
}

// unset reports whether value, at path, means the same as no value: an
// empty message ("{}"), or a zero, false or empty field or wrapper.
// Runtimes send such fields or leave them out as they please (containerd
// reports an empty "hooks" or "linux.resources.cpu" it was not sent, and
// drops a requested cpu.period of 0). Entries of lists and maps (paths
// ending in "]", such as env[X] = "0") are values in their own right.
func unset(path, value string) bool {
	if strings.HasSuffix(path, "]") {
		return false
	}
	switch value {
	case "", "{}", "[]", "0", "false":
		return true
	}
	return false
}

// Diff returns the differences between two views of a container, ordered
// by path. Lifecycle fields (state, pid, timestamps, exit status) are
// ignored, and so are fields that are absent in one view and empty or
// zero in the other (see unset).
func Diff(before, after *api.Container) []Change {
	return diffFields(ocispec.Fields(before), ocispec.Fields(after))
}

// diffFields compares two flattened views (ocispec.Fields).
func diffFields(a, b map[string]string) []Change {
	var out []Change
	for _, c := range ocispec.DiffFields(a, b) {
		if !lifecycle(c.Path) && c.Old != c.New && !(unset(c.Path, c.Old) && unset(c.Path, c.New)) {
			out = append(out, Change{Change: c})
		}
	}
	return out
}

const resources = "linux.resources."

// updateBase returns the view of the container a resource update asks
// for: its current fields with the requested resources laid over them.
// A runtime keeps the resources an update does not mention (containerd
// keeps the default device rule "deny all", linux.resources.devices[0])
// or asks for as zero (CRI's "unset"), so those are no change.
func updateBase(current *api.Container, requested *api.LinuxResources) map[string]string {
	base := ocispec.Fields(current)
	asked := ocispec.Fields(&api.Container{Linux: &api.LinuxContainer{Resources: requested}})
	for k, v := range asked {
		if !unset(k, v) {
			base[k] = v
		}
	}
	return base
}

// resourcesOnly keeps the fields of linux.resources.
func resourcesOnly(fields map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fields {
		if strings.HasPrefix(k, resources) {
			out[k] = v
		}
	}
	return out
}

// Runtime describes what the differ knows about how a runtime shows
// containers to its plugins, by the runtime's name (from Configure).
type Runtime struct {
	// Name is the runtime's name.
	Name string
	// Chained is true for a runtime that shows each plugin the container
	// as changed by the plugins before it (nrikit's), false for one that
	// shows every plugin the container as it proposed it (containerd and
	// CRI-O, with upstream's NRI library).
	Chained bool
	// Known is false for a runtime the differ knows nothing about.
	Known bool
}

// RuntimeNamed returns what the differ knows about the runtime called
// name.
func RuntimeNamed(name string) Runtime {
	switch strings.ToLower(name) {
	case "containerd", "cri-o", "crio":
		return Runtime{Name: name, Known: true}
	case "nri-simulator", "stubtest":
		return Runtime{Name: name, Known: true, Chained: true}
	}
	return Runtime{Name: name}
}

// upstream reports whether the runtime uses upstream's NRI library.
func (r Runtime) upstream() bool { return r.Known && !r.Chained }

// Attribution says whose changes the differ's report shows on this
// runtime.
func (r Runtime) Attribution() string {
	switch {
	case r.Chained:
		return "the plugins after the differ, by index (" + r.Name + " shows each plugin the container as changed by the plugins before it)"
	case r.Known:
		return "all plugins, at any index (" + r.Name + " shows every plugin the container as it proposed it)"
	case r.Name == "":
		return "plugins (runtime not configured yet)"
	}
	return "plugins (runtime " + r.Name + ": not known whether it shows plugins the proposed container or the one changed by the plugins before them)"
}

// markRuntime marks the changes the differ recognises as the runtime's
// own doing (only for runtimes it knows) in after, the view of the
// container the runtime reported.
func (r Runtime) markRuntime(changes []Change, after map[string]string) {
	if !r.upstream() {
		return
	}
	for i, c := range changes {
		// containerd and CRI-O set the swap limit to the memory limit
		// (no swap) when a request sets a memory limit but no swap.
		if c.Path == resources+"memory.swap" && unset(c.Path, c.Old) && c.New != "" && c.New == after[resources+"memory.limit"] {
			changes[i].Runtime = r.Name + " sets the swap limit to the memory limit when none is asked for"
		}
	}
}
