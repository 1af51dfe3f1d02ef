// Package hookinjector is a sample NRI plugin that injects OCI hooks into
// containers, from a hooks.d directory of JSON files in the format of
// podman and CRI-O (oci-hooks(5), version 1.0.0):
//
//	{
//	  "version": "1.0.0",
//	  "hook": {"path": "/usr/bin/nvidia-ctk", "args": ["nvidia-ctk", "hook"], "timeout": 5},
//	  "when": {"annotations": {"^gpu\\.example\\.com/hook$": "^on$"}},
//	  "stages": ["createRuntime"]
//	}
//
// A container gets a hook if any of its "when" conditions holds:
// "always": true; "annotations", a map of key regex to value regex, when a
// container annotation matches both; "commands", regexes over the
// container's args[0]; "hasBindMounts": true, when the container has a
// bind mount. Regexes are unanchored (as in podman). Files are read in
// name order; a file in a later directory replaces the same-named file of
// an earlier one. Unlike podman, the hook's path is not required to exist
// on the machine running the plugin (it must be absolute).
//
// The directories are read when the runtime configures the plugin.
// Configuration (YAML, [Config]) or the -hooks-dir flag (repeatable) names
// them; the configuration also lists the hooks the files may define, by
// executable and stages:
//
//	hooksDirs: [/usr/share/containers/oci/hooks.d, /etc/containers/oci/hooks.d]
//	hooks:
//	  - {path: /usr/bin/nvidia-ctk, stages: [createContainer]}
//
// Relative directories are relative to the plugin's working directory.
//
// A hook's program runs as root on the host, and the hooks.d directories
// are shared with podman and CRI-O (a package can drop a hook meant for
// them there), so the plugin injects only the hooks its configuration's
// hooks list allows, and without one it injects none: a hook file whose
// executable or stages no rule allows is skipped, with a warning naming
// the file, each time the directories are read. This is the plugin's own
// line of defence; the node's policy (docs/policy.md) is the runtime's.
package hookinjector

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

// Name is the plugin's default name.
const Name = "hook-injector"

// DefaultDirs are the hook directories read without configuration.
func DefaultDirs() []string {
	return []string{"/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d"}
}

// Config is the plugin's configuration. The zero Config (no
// configuration) reads the default directories and injects no hook.
type Config struct {
	// HooksDirs replaces the plugin's hook directories.
	HooksDirs []string `yaml:"hooksDirs"`
	// Hooks are the hooks the hook files may define, by executable and
	// stages; empty: none (every hook file is skipped).
	Hooks []HookRule `yaml:"hooks"`
}

// ParseConfig decodes and checks a configuration: unknown keys are
// errors, as are malformed path patterns, rules without stages and
// unknown stages. The error names the plugin, and the line or the field.
func ParseConfig(config string) (Config, error) {
	var c Config
	if strings.TrimSpace(config) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid hook-injector configuration: %w", err)
	}
	for i, r := range c.Hooks {
		if err := r.validate(); err != nil {
			return Config{}, fmt.Errorf("invalid hook-injector configuration: hooks[%d]: %w", i, err)
		}
	}
	return c, nil
}

// Plugin injects OCI hooks. It is safe for concurrent use.
type Plugin struct {
	log  *slog.Logger
	dirs []string

	mu    sync.Mutex
	hooks []*compiled
}

// New returns the plugin reading dirs (nil: [DefaultDirs]) when it is
// configured.
func New(log *slog.Logger, dirs []string) *Plugin {
	if dirs == nil {
		dirs = DefaultDirs()
	}
	return &Plugin{log: log, dirs: slices.Clone(dirs)}
}

// Configure reads the hook directories and keeps the hooks the
// configuration allows.
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	if c.HooksDirs == nil {
		c.HooksDirs = p.dirs
	}
	if err := p.Reload(c); err != nil {
		return 0, err
	}
	return 0, nil
}

// Reload reads the hooks of c's directories, replacing those read before,
// and keeps those c allows: a hook file no rule of c.Hooks allows is
// skipped and logged as a warning. An invalid file is an error.
func (p *Plugin) Reload(c Config) error {
	hooks, err := loadHooks(c.HooksDirs)
	if err != nil {
		return err
	}
	files := make([]string, 0, len(hooks))
	allowed := hooks[:0:0]
	for _, h := range hooks {
		if reason := c.CheckHook(h.def.Hook.Path, h.def.Stages); reason != "" {
			p.log.Warn("skipping an OCI hook the configuration does not allow", "hook", h.file,
				"path", allow.Quote(h.def.Hook.Path), "stages", h.def.Stages, "reason", reason)
			continue
		}
		allowed = append(allowed, h)
		files = append(files, h.file)
	}
	p.log.Info("loaded OCI hooks", "dirs", c.HooksDirs, "hooks", files, "skipped", len(hooks)-len(allowed))
	p.mu.Lock()
	p.hooks = allowed
	p.mu.Unlock()
	return nil
}

// CreateContainer injects the hooks whose conditions hold.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	hooks := p.hooks
	p.mu.Unlock()
	injected := &api.Hooks{}
	n := 0
	for _, h := range hooks {
		ok, why := h.matches(ctr)
		if !ok {
			continue
		}
		h.addTo(injected)
		n++
		p.log.Info("injecting OCI hook", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(),
			"hook", h.file, "stages", h.def.Stages, "condition", why)
	}
	if n == 0 {
		return nil, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	adj.AddHooks(injected)
	return adj, nil, nil
}
