// Package gpuenv is a sample NRI plugin that sets GPU environment
// variables (NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES, ...) in
// the containers of GPU pods.
//
// It is the motivating example of nrikit's scope filters: the plugin does
// not look at pod labels itself. It registers with the scope
// [DefaultScope] (pods labelled accel=gpu), so a nrikit runtime sends it
// events about GPU pods only, and every other pod is created without a
// round trip to the plugin. A runtime that ignores scopes (containerd,
// CRI-O) sends every event; the command (Main, `nri plugin gpu-env`, the
// standalone binary) then enforces the scope itself and leaves other pods
// alone. Only an embedder that runs [Plugin] on its own stub without
// pluginmain must filter by itself on such runtimes.
//
// Configuration (the runtime's Configure config, YAML):
//
//	env:                      # variables to set (these are the defaults)
//	  NVIDIA_VISIBLE_DEVICES: all
//	  NVIDIA_DRIVER_CAPABILITIES: compute,utility
//
// A pod annotation overrides NVIDIA_VISIBLE_DEVICES per container
// ("gpu-env.nrikit.dev/visible-devices/container.NAME"), for the whole
// pod ("gpu-env.nrikit.dev/visible-devices/pod" or without suffix), if
// the plugin sets NVIDIA_VISIBLE_DEVICES: an instance configured with
// other variables (-env, env:) leaves it alone, so that several instances
// can run side by side without conflicting over it.
package gpuenv

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
)

const (
	// Name is the plugin's default name.
	Name = "gpu-env"
	// VisibleDevicesAnnotation overrides NVIDIA_VISIBLE_DEVICES, in the
	// instances that set it.
	VisibleDevicesAnnotation = "gpu-env.nrikit.dev/visible-devices"
	// VisibleDevicesEnv is the variable VisibleDevicesAnnotation sets.
	VisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES"
)

// DefaultScope is the plugin's default event scope: pods labelled
// accel=gpu.
func DefaultScope() *api.PluginScope { return &api.PluginScope{PodLabelSelector: "accel=gpu"} }

// DefaultEnv returns the variables set without configuration.
func DefaultEnv() map[string]string {
	return map[string]string{VisibleDevicesEnv: "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
}

// Config is the plugin's configuration.
type Config struct {
	// Env are the variables to set; nil keeps the defaults.
	Env map[string]string `yaml:"env"`
}

// ParseConfig decodes a configuration; unknown keys are errors.
func ParseConfig(config string) (Config, error) {
	var c Config
	if strings.TrimSpace(config) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid gpu-env configuration: %w", err)
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Config{}, fmt.Errorf("invalid gpu-env configuration: env: bad variable name %q", k)
		}
	}
	return c, nil
}

// Plugin sets GPU environment variables. It is safe for concurrent use.
type Plugin struct {
	log *slog.Logger

	mu  sync.Mutex
	env map[string]string
}

// New returns the plugin with the given variables (nil: [DefaultEnv]).
func New(log *slog.Logger, env map[string]string) *Plugin {
	if env == nil {
		env = DefaultEnv()
	}
	return &Plugin{log: log, env: maps.Clone(env)}
}

// Configure replaces the variables with the configured ones, if any.
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	if c.Env != nil {
		p.mu.Lock()
		p.env = c.Env
		p.mu.Unlock()
	}
	return 0, nil
}

// CreateContainer sets the variables in the container.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	env := maps.Clone(p.env)
	p.mu.Unlock()
	// The annotation overrides the variable; it does not add it to an
	// instance configured without it.
	if _, sets := env[VisibleDevicesEnv]; sets {
		if v, ok := api.EffectiveAnnotation(pod, VisibleDevicesAnnotation, ctr.GetName()); ok {
			env[VisibleDevicesEnv] = v
		}
	}
	adj := &api.ContainerAdjustment{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		adj.AddEnv(k, env[k])
	}
	p.log.Info("setting GPU environment", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(), "variables", len(env))
	return adj, nil, nil
}
