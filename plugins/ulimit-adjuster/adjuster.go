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
//
// Whoever can create a pod writes the annotation, so the plugin sets only
// the limits its configuration ([Config]) caps, up to the cap, in the pods
// of the configured namespaces; without a configuration it sets none. A
// limit it does not allow fails the container's creation with an error
// naming the annotation and the limit, and is logged as a warning naming
// the pod.
package ulimitadjuster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/allow"
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

// String renders the limit as "RLIMIT_NOFILE soft=1024 hard=4096".
func (l Limit) String() string {
	return fmt.Sprintf("%s soft=%d hard=%d", l.Type, l.Soft, l.Hard)
}

// Plugin adjusts resource limits. It is safe for concurrent use.
type Plugin struct {
	log *slog.Logger

	mu  sync.Mutex
	cfg Config
}

// New returns the plugin, allowing no limit until it is configured.
func New(log *slog.Logger) *Plugin { return &Plugin{log: log} }

// Configure takes the configuration (the runtime's, or -config's): the
// namespaces and the caps. An empty one allows no limit.
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	return 0, nil
}

// CreateContainer sets the annotated limits, if the configuration allows
// all of them, and fails the creation otherwise.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	cfg := p.cfg // replaced, never modified
	p.mu.Unlock()
	podName := pod.GetNamespace() + "/" + pod.GetName()
	if !cfg.Namespaces.Allows(pod.GetNamespace()) {
		p.log.Debug("pod outside the plugin's namespaces", "pod", podName, "container", ctr.GetName())
		return nil, nil, nil
	}
	limits, err := cfg.Allowed(pod, ctr.GetName())
	if err != nil {
		args := []any{"pod", podName, "container", ctr.GetName()}
		if r := (*allow.Refusal)(nil); errors.As(err, &r) {
			args = append(args, r.LogArgs()...)
		} else {
			args = append(args, "error", err)
		}
		p.log.Warn("refusing the pod's request", args...)
		return nil, nil, err
	}
	if len(limits) == 0 {
		return nil, nil, nil
	}
	adj := &api.ContainerAdjustment{}
	for _, l := range limits {
		adj.AddRlimit(l.Type, l.Hard, l.Soft)
	}
	p.log.Info("adjusting ulimits", "pod", podName, "container", ctr.GetName(), "limits", len(limits))
	return adj, nil, nil
}

// Allowed returns the limits the pod's annotations set for container
// (Limits) if c allows every one of them, and an error wrapping an
// [allow.Refusal] naming the first it does not allow otherwise. It does
// not look at c.Namespaces.
func (c *Config) Allowed(pod *api.PodSandbox, container string) ([]Limit, error) {
	key, limits, err := Limits(pod, container)
	if err != nil {
		return nil, err
	}
	for i, l := range limits {
		if reason := c.CheckLimit(l); reason != "" {
			return nil, &allow.Refusal{Annotation: key, Entry: fmt.Sprintf("limit %d", i+1), Value: l.String(), Reason: reason}
		}
	}
	return limits, nil
}

// Limits returns the limits the pod's annotations set for container, with
// canonical types, and the annotation's full key.
func Limits(pod *api.PodSandbox, container string) (string, []Limit, error) {
	key, v, ok := allow.Annotation(pod.GetAnnotations(), Annotation, container)
	if !ok {
		if key, v, ok = allow.Annotation(pod.GetAnnotations(), LegacyAnnotation, container); !ok {
			return "", nil, nil
		}
	}
	var limits []Limit
	dec := yaml.NewDecoder(strings.NewReader(v))
	dec.KnownFields(true)
	if err := dec.Decode(&limits); err != nil {
		return key, nil, fmt.Errorf("annotation %s of container %q: %w", key, container, err)
	}
	if len(limits) > allow.MaxEntries {
		return key, nil, fmt.Errorf("annotation %s of container %q: %d entries, more than the %d allowed", key, container, len(limits), allow.MaxEntries)
	}
	for i := range limits {
		t, err := NormalizeType(limits[i].Type)
		if err != nil {
			return key, nil, fmt.Errorf("annotation %s of container %q: %w", key, container, err)
		}
		if limits[i].Soft > limits[i].Hard {
			return key, nil, fmt.Errorf("annotation %s of container %q: %s: soft limit %d exceeds hard limit %d",
				key, container, t, limits[i].Soft, limits[i].Hard)
		}
		limits[i].Type = t
	}
	return key, limits, nil
}
