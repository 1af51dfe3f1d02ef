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
// Configuration (the runtime's Configure config, YAML; [Config]):
//
//	namespaces: [ml]          # the namespaces served (default: all)
//	env:                      # variables to set (these are the defaults)
//	  NVIDIA_VISIBLE_DEVICES: void
//	  NVIDIA_DRIVER_CAPABILITIES: compute,utility
//	visibleDevices: ["[0-7]"] # what NVIDIA_VISIBLE_DEVICES may name (default: nothing)
//
// A pod annotation overrides NVIDIA_VISIBLE_DEVICES per container
// ("gpu-env.nrikit.dev/visible-devices/container.NAME"), for the whole
// pod ("gpu-env.nrikit.dev/visible-devices/pod" or without suffix), if
// the plugin sets NVIDIA_VISIBLE_DEVICES: an instance configured with
// other variables (-env, env:) leaves it alone, so that several instances
// can run side by side without conflicting over it.
//
// NVIDIA_VISIBLE_DEVICES is what the NVIDIA container runtime reads to
// give a container GPUs, and whoever can label a pod accel=gpu and
// annotate it asks for them, so its value, from the configuration or from
// an annotation, names only devices of visibleDevices (patterns over
// indexes and UUIDs), or "none" or "void" (no GPU); "all" only if
// visibleDevices lists "all" itself. A value the configuration does not
// allow fails the configuration, and one from an annotation fails the
// container's creation naming the annotation (logged as a warning naming
// the pod).
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
	"github.com/nrikit/nrikit/plugins/internal/allow"
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

// DefaultEnv returns the variables set without configuration: no GPU
// (NVIDIA_VISIBLE_DEVICES=void) unless an annotation names allowed ones.
func DefaultEnv() map[string]string {
	return map[string]string{VisibleDevicesEnv: "void", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
}

// Bounds on the NVIDIA_VISIBLE_DEVICES value of an annotation.
const (
	// MaxVisibleDevicesLen is its length in bytes.
	MaxVisibleDevicesLen = 1024
	// MaxVisibleDevices is the number of devices it names.
	MaxVisibleDevices = 64
)

// Config is the plugin's configuration.
type Config struct {
	// Namespaces are the namespaces (patterns) whose pods the plugin
	// serves; empty: every namespace. The plugin leaves the pods of
	// other namespaces alone.
	Namespaces allow.Namespaces `yaml:"namespaces"`
	// Env are the variables to set; nil keeps the defaults (or -env's).
	Env map[string]string `yaml:"env"`
	// VisibleDevices are the devices NVIDIA_VISIBLE_DEVICES may name:
	// patterns (path.Match) over GPU indexes, UUIDs and MIG names, such
	// as "[0-3]" or "GPU-*"; "all" is allowed only if listed as "all".
	// "none" and "void" are always allowed. Empty: no GPU.
	VisibleDevices []string `yaml:"visibleDevices"`
}

// ParseConfig decodes a configuration; unknown keys are errors, and so is
// an NVIDIA_VISIBLE_DEVICES in env that visibleDevices does not allow.
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
	if err := c.Namespaces.Validate(); err != nil {
		return Config{}, fmt.Errorf("invalid gpu-env configuration: %w", err)
	}
	for i, p := range c.VisibleDevices {
		if err := allow.CheckPattern(p); err != nil {
			return Config{}, fmt.Errorf("invalid gpu-env configuration: visibleDevices[%d]: %w", i, err)
		}
	}
	if v, ok := c.Env[VisibleDevicesEnv]; ok {
		if reason := c.CheckVisibleDevices(v); reason != "" {
			return Config{}, fmt.Errorf("invalid gpu-env configuration: env: %s=%s: %s", VisibleDevicesEnv, allow.Quote(v), reason)
		}
	}
	return c, nil
}

// CheckVisibleDevices returns why an NVIDIA_VISIBLE_DEVICES value (a
// comma-separated list) is refused, or "" if c allows every device it
// names.
func (c *Config) CheckVisibleDevices(v string) string {
	if len(v) > MaxVisibleDevicesLen {
		return fmt.Sprintf("longer than %d bytes", MaxVisibleDevicesLen)
	}
	devices := strings.Split(v, ",")
	if len(devices) > MaxVisibleDevices {
		return fmt.Sprintf("more than %d devices", MaxVisibleDevices)
	}
	for _, d := range devices {
		d = strings.TrimSpace(d)
		switch {
		case d == "" || d == "none" || d == "void":
		case d == "all":
			if !slices.Contains(c.VisibleDevices, "all") {
				return `"all" is not allowed: visibleDevices does not list it`
			}
		case !allow.MatchAny(c.VisibleDevices, d):
			return fmt.Sprintf("device %s is not in the plugin's visibleDevices", allow.Quote(d))
		}
	}
	return ""
}

// Plugin sets GPU environment variables. It is safe for concurrent use.
type Plugin struct {
	log *slog.Logger

	mu  sync.Mutex
	env map[string]string
	cfg Config
}

// New returns the plugin with the given variables (nil: [DefaultEnv]).
// Until it is configured it allows no GPU: a variable NVIDIA_VISIBLE_DEVICES
// in env naming one fails Configure unless the configuration allows it.
func New(log *slog.Logger, env map[string]string) *Plugin {
	if env == nil {
		env = DefaultEnv()
	}
	return &Plugin{log: log, env: maps.Clone(env)}
}

// Configure takes the configuration: the namespaces, the devices allowed,
// and the variables, if it has some. The variables it leaves (-env's, or
// the defaults) are checked against its visibleDevices too.
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	env := p.env
	if c.Env != nil {
		env = c.Env
	}
	if v, ok := env[VisibleDevicesEnv]; ok {
		if reason := c.CheckVisibleDevices(v); reason != "" {
			return 0, fmt.Errorf("invalid gpu-env configuration: %s=%s (from -env or the defaults): %s", VisibleDevicesEnv, allow.Quote(v), reason)
		}
	}
	p.env, p.cfg = env, c
	return 0, nil
}

// CreateContainer sets the variables in the container, if the pod is in
// the configured namespaces, and fails the creation if the pod's
// visible-devices annotation names a device the configuration does not
// allow.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	env := maps.Clone(p.env)
	cfg := p.cfg // replaced, never modified
	p.mu.Unlock()
	podName := pod.GetNamespace() + "/" + pod.GetName()
	if !cfg.Namespaces.Allows(pod.GetNamespace()) {
		p.log.Debug("pod outside the plugin's namespaces", "pod", podName, "container", ctr.GetName())
		return nil, nil, nil
	}
	// The annotation overrides the variable; it does not add it to an
	// instance configured without it.
	if _, sets := env[VisibleDevicesEnv]; sets {
		if key, v, ok := allow.Annotation(pod.GetAnnotations(), VisibleDevicesAnnotation, ctr.GetName()); ok {
			if reason := cfg.CheckVisibleDevices(v); reason != "" {
				r := &allow.Refusal{Annotation: key, Value: v, Reason: reason}
				p.log.Warn("refusing the pod's request", append([]any{"pod", podName, "container", ctr.GetName()}, r.LogArgs()...)...)
				return nil, nil, r
			}
			env[VisibleDevicesEnv] = v
		}
	}
	adj := &api.ContainerAdjustment{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		adj.AddEnv(k, env[k])
	}
	p.log.Info("setting GPU environment", "pod", podName, "container", ctr.GetName(), "variables", len(env))
	return adj, nil, nil
}
