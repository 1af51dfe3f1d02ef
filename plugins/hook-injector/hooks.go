package hookinjector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// HookFile is one hook definition, in the 1.0.0 format of podman and
// CRI-O (oci-hooks(5)).
type HookFile struct {
	// Version must be "1.0.0".
	Version string `json:"version"`
	// Hook is the hook to inject.
	Hook Hook `json:"hook"`
	// When says which containers get the hook.
	When When `json:"when"`
	// Stages are the OCI hook stages the hook is injected at.
	Stages []string `json:"stages"`
}

// Hook is the executable an OCI hook runs.
type Hook struct {
	Path    string   `json:"path"`
	Args    []string `json:"args,omitempty"`
	Env     []string `json:"env,omitempty"`
	Timeout *int     `json:"timeout,omitempty"`
}

// When holds the conditions of a hook; a container gets the hook if any
// condition holds.
type When struct {
	// Always, if true, matches every container.
	Always *bool `json:"always,omitempty"`
	// Annotations maps key regexes to value regexes; it matches if some
	// container annotation matches a pair.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Commands are regexes over the container's args[0].
	Commands []string `json:"commands,omitempty"`
	// HasBindMounts, if true, matches containers with a bind mount.
	HasBindMounts *bool `json:"hasBindMounts,omitempty"`
}

// Stages returns the valid stage names.
func Stages() []string {
	return []string{"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}
}

// compiled is a validated hook with its regexes compiled.
type compiled struct {
	file        string
	def         HookFile
	annotations []annotationRE
	commands    []*regexp.Regexp
}

type annotationRE struct{ key, value *regexp.Regexp }

// compile validates a hook definition read from file.
func compile(file string, h HookFile) (*compiled, error) {
	if h.Version != "1.0.0" {
		return nil, fmt.Errorf("%s: unsupported version %q (want 1.0.0)", file, h.Version)
	}
	if !path.IsAbs(h.Hook.Path) {
		return nil, fmt.Errorf("%s: hook.path %q is not an absolute path", file, h.Hook.Path)
	}
	if len(h.Stages) == 0 {
		return nil, fmt.Errorf("%s: no stages", file)
	}
	for _, s := range h.Stages {
		if !slices.Contains(Stages(), s) {
			return nil, fmt.Errorf("%s: unknown stage %q (one of %s)", file, s, strings.Join(Stages(), ", "))
		}
	}
	w := h.When
	if (w.Always == nil || !*w.Always) && len(w.Annotations) == 0 && len(w.Commands) == 0 && (w.HasBindMounts == nil || !*w.HasBindMounts) {
		return nil, fmt.Errorf("%s: \"when\" needs at least one condition (always, annotations, commands, hasBindMounts)", file)
	}
	c := &compiled{file: file, def: h}
	keys := make([]string, 0, len(w.Annotations))
	for k := range w.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kre, err := regexp.Compile(k)
		if err != nil {
			return nil, fmt.Errorf("%s: when.annotations key: %w", file, err)
		}
		vre, err := regexp.Compile(w.Annotations[k])
		if err != nil {
			return nil, fmt.Errorf("%s: when.annotations[%q]: %w", file, k, err)
		}
		c.annotations = append(c.annotations, annotationRE{kre, vre})
	}
	for _, cmd := range w.Commands {
		re, err := regexp.Compile(cmd)
		if err != nil {
			return nil, fmt.Errorf("%s: when.commands: %w", file, err)
		}
		c.commands = append(c.commands, re)
	}
	return c, nil
}

// matches reports whether the hook applies to ctr, with the condition
// that matched.
func (c *compiled) matches(ctr *api.Container) (bool, string) {
	w := c.def.When
	if w.Always != nil && *w.Always {
		return true, "always"
	}
	if w.HasBindMounts != nil && *w.HasBindMounts && hasBindMounts(ctr) {
		return true, "hasBindMounts"
	}
	for _, a := range c.annotations {
		for k, v := range ctr.GetAnnotations() {
			if a.key.MatchString(k) && a.value.MatchString(v) {
				return true, "annotation " + k
			}
		}
	}
	if args := ctr.GetArgs(); len(args) > 0 {
		for _, re := range c.commands {
			if re.MatchString(args[0]) {
				return true, "command " + args[0]
			}
		}
	}
	return false, ""
}

func hasBindMounts(ctr *api.Container) bool {
	for _, m := range ctr.GetMounts() {
		if m.GetType() == "bind" || slices.Contains(m.GetOptions(), "bind") || slices.Contains(m.GetOptions(), "rbind") {
			return true
		}
	}
	return false
}

// toAPI converts the hook for the adjustment.
func (h Hook) toAPI() *api.Hook {
	out := &api.Hook{Path: h.Path, Args: slices.Clone(h.Args), Env: slices.Clone(h.Env)}
	if h.Timeout != nil {
		out.Timeout = &api.OptionalInt{Value: int64(*h.Timeout)}
	}
	return out
}

// addTo adds the hook at its stages to hooks.
func (c *compiled) addTo(hooks *api.Hooks) {
	for _, s := range c.def.Stages {
		h := c.def.Hook.toAPI()
		switch s {
		case "prestart":
			hooks.Prestart = append(hooks.Prestart, h)
		case "createRuntime":
			hooks.CreateRuntime = append(hooks.CreateRuntime, h)
		case "createContainer":
			hooks.CreateContainer = append(hooks.CreateContainer, h)
		case "startContainer":
			hooks.StartContainer = append(hooks.StartContainer, h)
		case "poststart":
			hooks.Poststart = append(hooks.Poststart, h)
		case "poststop":
			hooks.Poststop = append(hooks.Poststop, h)
		}
	}
}

// loadHooks reads the *.json hook files of dirs. A file in a later directory
// replaces the file of the same name in an earlier one; missing
// directories are skipped. Hooks are returned ordered by file name. Any
// invalid file is an error naming it.
func loadHooks(dirs []string) ([]*compiled, error) {
	byName := map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading hooks directory: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
				continue
			}
			byName[e.Name()] = filepath.Join(dir, e.Name())
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	hooks := make([]*compiled, 0, len(names))
	for _, n := range names {
		file := byName[n]
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading hook: %w", err)
		}
		var h HookFile
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		c, err := compile(file, h)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, c)
	}
	return hooks, nil
}
