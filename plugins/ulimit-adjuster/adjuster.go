// Package ulimitadjuster is a sample NRI plugin that sets POSIX resource
// limits (ulimits) of containers from pod annotations, following the
// conventions of containerd/nri's ulimit-adjuster sample:
//
//	ulimits.noderesource.dev/container.NAME: |
//	  - type: RLIMIT_NOFILE     # also "rlimit_nofile" or "nofile"
//	    soft: 1024
//	    hard: 4096
//	  - type: memlock
//	    soft: 1073741824
//	    hard: 1073741824
//
// The suffix "/pod" (or none) applies the annotation to every container of
// the pod; the older key ulimits.nri.containerd.io/container.NAME is
// accepted too. A limit whose soft value exceeds the hard one, or an
// unknown type, fails the container's creation with an error naming the
// annotation.
package ulimitadjuster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
)

const (
	// Name is the plugin's default name.
	Name = "ulimit-adjuster"
	// Annotation is the annotation key (without the scope suffix).
	Annotation = "ulimits.noderesource.dev"
	// LegacyAnnotation is the key of upstream's first release.
	LegacyAnnotation = "ulimits.nri.containerd.io"
)

// Limit is one resource limit, as written in the annotation.
type Limit struct {
	Type string `yaml:"type"`
	Soft uint64 `yaml:"soft"`
	Hard uint64 `yaml:"hard"`
}

// rlimitTypes are the Linux resource limits (setrlimit(2)), without the
// RLIMIT_ prefix.
func rlimitTypes() []string {
	return []string{"AS", "CORE", "CPU", "DATA", "FSIZE", "LOCKS", "MEMLOCK", "MSGQUEUE", "NICE",
		"NOFILE", "NPROC", "RSS", "RTPRIO", "RTTIME", "SIGPENDING", "STACK"}
}

// NormalizeType returns the canonical name (RLIMIT_NOFILE) of a limit
// type written in any case, with or without the prefix.
func NormalizeType(t string) (string, error) {
	name := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(t)), "RLIMIT_")
	if !slices.Contains(rlimitTypes(), name) {
		return "", fmt.Errorf("unknown resource limit type %q", t)
	}
	return "RLIMIT_" + name, nil
}

// Plugin adjusts resource limits. It is stateless.
type Plugin struct {
	log *slog.Logger
}

// New returns the plugin.
func New(log *slog.Logger) *Plugin { return &Plugin{log: log} }

// CreateContainer sets the annotated limits.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	limits, err := Limits(pod, ctr.GetName())
	if err != nil || len(limits) == 0 {
		return nil, nil, err
	}
	adj := &api.ContainerAdjustment{}
	for _, l := range limits {
		adj.AddRlimit(l.Type, l.Hard, l.Soft)
	}
	p.log.Info("adjusting ulimits", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(), "limits", len(limits))
	return adj, nil, nil
}

// Limits returns the limits the pod's annotations set for container, with
// canonical types.
func Limits(pod *api.PodSandbox, container string) ([]Limit, error) {
	key := Annotation
	v, ok := api.EffectiveAnnotation(pod, key, container)
	if !ok {
		key = LegacyAnnotation
		if v, ok = api.EffectiveAnnotation(pod, key, container); !ok {
			return nil, nil
		}
	}
	var limits []Limit
	dec := yaml.NewDecoder(strings.NewReader(v))
	dec.KnownFields(true)
	if err := dec.Decode(&limits); err != nil {
		return nil, fmt.Errorf("annotation %s of container %q: %w", key, container, err)
	}
	for i := range limits {
		t, err := NormalizeType(limits[i].Type)
		if err != nil {
			return nil, fmt.Errorf("annotation %s of container %q: %w", key, container, err)
		}
		if limits[i].Soft > limits[i].Hard {
			return nil, fmt.Errorf("annotation %s of container %q: %s: soft limit %d exceeds hard limit %d",
				key, container, t, limits[i].Soft, limits[i].Hard)
		}
		limits[i].Type = t
	}
	return limits, nil
}

// Config is the plugin's configuration: it takes none, so any key is an
// error (ParseConfig).
type Config struct{}

// ParseConfig checks a configuration (the runtime's, or the file of
// -config): this plugin takes none, so anything but an empty document or
// comments is refused, naming the key.
func ParseConfig(config string) (Config, error) {
	var c Config
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid ulimit-adjuster configuration: %w", err)
	}
	return c, nil
}

// Configure refuses a configuration: the plugin takes none (ParseConfig).
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	_, err := ParseConfig(config)
	return 0, err
}
