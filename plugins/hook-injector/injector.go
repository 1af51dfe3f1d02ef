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
// Configuration (YAML) or the -hooks-dir flag (repeatable) names them:
//
//	hooksDirs: [/usr/share/containers/oci/hooks.d, /etc/containers/oci/hooks.d]
//
// Relative directories are relative to the plugin's working directory.
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
)

// Name is the plugin's default name.
const Name = "hook-injector"

// DefaultDirs are the hook directories read without configuration.
func DefaultDirs() []string {
	return []string{"/usr/share/containers/oci/hooks.d", "/etc/containers/oci/hooks.d"}
}

// Config is the plugin's configuration.
type Config struct {
	// HooksDirs replaces the plugin's hook directories.
	HooksDirs []string `yaml:"hooksDirs"`
}

// ParseConfig decodes a configuration; unknown keys are errors.
func ParseConfig(config string) (Config, error) {
	var c Config
	if strings.TrimSpace(config) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid hook-injector configuration: %w", err)
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

// Configure reads the hook directories.
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	dirs := p.dirs
	if c.HooksDirs != nil {
		dirs = c.HooksDirs
	}
	if err := p.Reload(dirs); err != nil {
		return 0, err
	}
	return 0, nil
}

// Reload reads the hooks of dirs, replacing those read before.
func (p *Plugin) Reload(dirs []string) error {
	hooks, err := loadHooks(dirs)
	if err != nil {
		return err
	}
	files := make([]string, 0, len(hooks))
	for _, h := range hooks {
		files = append(files, h.file)
	}
	p.log.Info("loaded OCI hooks", "dirs", dirs, "hooks", files)
	p.mu.Lock()
	p.hooks = hooks
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
