package differ

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/report"
)

// Change is one field that differs between two views of a container.
type Change struct {
	// Path names the field, such as "env[FOO]", "mounts[/data]",
	// "linux.resources.memory.limit" (see report.Fields).
	Path string
	// Old and New are the values ("" when absent).
	Old, New string
}

// String formats the change as `path: old -> new`.
func (c Change) String() string {
	show := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	return fmt.Sprintf("%s: %s -> %s", c.Path, show(c.Old), show(c.New))
}

// lifecycle are the container fields that change on their own, without
// any plugin's doing.
func lifecycle(path string) bool {
	return slices.Contains([]string{"state", "pid", "created_at", "started_at", "finished_at", "exit_code", "status_reason", "status_message"}, path)
}

// Diff returns the differences between two views of a container, ordered
// by path. Lifecycle fields (state, pid, timestamps, exit status) are
// ignored.
func Diff(before, after *api.Container) []Change {
	a, b := report.Fields(before), report.Fields(after)
	var out []Change
	for k, v := range a {
		if w, ok := b[k]; (!ok || w != v) && !lifecycle(k) {
			out = append(out, Change{Path: k, Old: v, New: w})
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok && !lifecycle(k) {
			out = append(out, Change{Path: k, New: w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// resourcesOnly keeps the changes to linux.resources.
func resourcesOnly(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if strings.HasPrefix(c.Path, "linux.resources.") {
			out = append(out, c)
		}
	}
	return out
}
