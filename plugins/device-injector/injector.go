// Package deviceinjector is a sample NRI plugin that injects device
// nodes, mounts and CDI devices into containers, as requested by pod
// annotations and allowed by its configuration. It follows the annotation
// conventions of containerd/nri's device-injector sample:
//
//	devices.noderesource.dev/container.NAME       device nodes for container NAME
//	mounts.noderesource.dev/container.NAME        mounts for container NAME
//	cdi-devices.noderesource.dev/container.NAME   CDI devices for container NAME
//
// The suffix "/pod" (or no suffix) applies an annotation to every
// container of the pod; a container-specific annotation takes precedence.
// The older domain "nri.io" (devices.nri.io/container.NAME, ...) is
// accepted too. Values are YAML lists:
//
//	devices.noderesource.dev/container.trainer: |
//	  - path: /dev/nvidia0
//	    type: c            # c, b, u or p
//	    major: 195
//	    minor: 0
//	    file_mode: 0666    # optional, as are uid and gid
//	mounts.noderesource.dev/container.trainer: |
//	  - source: /opt/models
//	    destination: /models
//	    type: bind
//	    options: [rbind, ro]
//	cdi-devices.noderesource.dev/container.trainer: |
//	  - nvidia.com/gpu=0
//
// Whoever can create a pod writes these annotations, so the plugin
// injects only what its configuration ([Config]) allows: device nodes by
// path pattern, type and major and minor numbers, bind mounts of host
// directories (read-only unless allowed read-write), CDI devices by name
// pattern, in the pods of the configured namespaces. Without a
// configuration it allows nothing. A request it does not allow, and an
// annotation that cannot be parsed, fail the container's creation with an
// error naming the annotation and the entry (a pod that asked for a
// device it cannot have does not start without it); a refusal is also
// logged as a warning naming the pod.
package deviceinjector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

// Name is the plugin's default name.
const Name = "device-injector"

// Annotation keys (without the scope suffix).
const (
	DeviceAnnotation    = "devices.noderesource.dev"
	MountAnnotation     = "mounts.noderesource.dev"
	CDIDeviceAnnotation = "cdi-devices.noderesource.dev"
	// LegacyDomain is the annotation domain of older releases.
	LegacyDomain = "nri.io"
)

// Device is a device node, as written in the annotation.
type Device struct {
	Path     string  `yaml:"path"`
	Type     string  `yaml:"type"`
	Major    int64   `yaml:"major"`
	Minor    int64   `yaml:"minor"`
	FileMode *uint32 `yaml:"file_mode"`
	UID      *uint32 `yaml:"uid"`
	GID      *uint32 `yaml:"gid"`
}

// String renders the device as ls -l would: "/dev/sda b 8:0".
func (d Device) String() string {
	return fmt.Sprintf("%s %s %d:%d", d.Path, d.Type, d.Major, d.Minor)
}

// Mount is a mount, as written in the annotation.
type Mount struct {
	Source      string   `yaml:"source"`
	Destination string   `yaml:"destination"`
	Type        string   `yaml:"type"`
	Options     []string `yaml:"options"`
}

// String renders the mount as "SOURCE on DESTINATION type TYPE (OPTIONS)".
func (m Mount) String() string {
	return fmt.Sprintf("%s on %s type %s (%s)", m.Source, m.Destination, m.Type, strings.Join(m.Options, ","))
}

// Plugin injects the annotated devices and mounts its configuration
// allows. It is safe for concurrent use.
type Plugin struct {
	log *slog.Logger

	mu  sync.Mutex
	cfg Config
}

// New returns the plugin, allowing nothing until it is configured.
func New(log *slog.Logger) *Plugin { return &Plugin{log: log} }

// Configure takes the configuration (the runtime's, or -config's): the
// namespaces and what their pods may ask for. An empty one allows
// nothing.
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

// CreateContainer injects what the pod's annotations ask for, if the
// configuration allows all of it, and fails the creation otherwise.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	cfg := p.cfg // replaced, never modified
	p.mu.Unlock()
	podName := pod.GetNamespace() + "/" + pod.GetName()
	if !cfg.Namespaces.Allows(pod.GetNamespace()) {
		p.log.Debug("pod outside the plugin's namespaces", "pod", podName, "container", ctr.GetName())
		return nil, nil, nil
	}
	adj, err := cfg.Adjustment(pod, ctr.GetName())
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
	if adj != nil {
		p.log.Info("injecting", "pod", podName, "container", ctr.GetName(),
			"devices", len(adj.GetLinux().GetDevices()), "mounts", len(adj.GetMounts()), "cdi-devices", len(adj.GetCDIDevices()))
	}
	return adj, nil, nil
}

// Adjustment returns the changes the pod's annotations ask for in
// container, or nil if none. An annotation that does not parse is an
// error; a request c does not allow is an error wrapping an
// [allow.Refusal]. It does not look at c.Namespaces.
func (c *Config) Adjustment(pod *api.PodSandbox, container string) (*api.ContainerAdjustment, error) {
	adj := &api.ContainerAdjustment{}
	changed := false
	var devices []Device
	if key, ok, err := decode(pod, DeviceAnnotation, container, &devices); err != nil {
		return nil, err
	} else if ok {
		for i, d := range devices {
			ld, err := d.toAPI()
			if err != nil {
				return nil, fmt.Errorf("annotation %s: device %d: %w", key, i+1, err)
			}
			if reason := c.CheckDevice(d); reason != "" {
				return nil, &allow.Refusal{Annotation: key, Entry: fmt.Sprintf("device %d", i+1), Value: d.String(), Reason: reason}
			}
			adj.AddDevice(ld)
			changed = true
		}
	}
	var mounts []Mount
	if key, ok, err := decode(pod, MountAnnotation, container, &mounts); err != nil {
		return nil, err
	} else if ok {
		for i, m := range mounts {
			if reason := c.CheckMount(m); reason != "" {
				return nil, &allow.Refusal{Annotation: key, Entry: fmt.Sprintf("mount %d", i+1), Value: m.String(), Reason: reason}
			}
			adj.AddMount(&api.Mount{Source: path.Clean(m.Source), Destination: m.Destination, Type: m.Type, Options: m.Options})
			changed = true
		}
	}
	var cdi []string
	if key, ok, err := decode(pod, CDIDeviceAnnotation, container, &cdi); err != nil {
		return nil, err
	} else if ok {
		for i, name := range cdi {
			if vendorClass, dev, ok := strings.Cut(name, "="); !ok || !strings.Contains(vendorClass, "/") || dev == "" {
				return nil, fmt.Errorf("annotation %s: %s is not a CDI device name (vendor.com/class=device)", key, allow.Quote(name))
			}
			if reason := c.CheckCDIDevice(name); reason != "" {
				return nil, &allow.Refusal{Annotation: key, Entry: fmt.Sprintf("CDI device %d", i+1), Value: name, Reason: reason}
			}
			adj.AddCDIDevice(&api.CDIDevice{Name: name})
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return adj, nil
}

// decode finds the effective annotation key for container (current domain
// first, then the legacy one) and decodes its YAML value, a list of at
// most [allow.MaxEntries] entries, into out. It returns the annotation's
// full key (with its /container.NAME or /pod suffix) and whether one was
// found.
func decode[T any](pod *api.PodSandbox, key, container string, out *[]T) (string, bool, error) {
	for _, k := range []string{key, strings.TrimSuffix(key, "noderesource.dev") + LegacyDomain} {
		k, v, ok := allow.Annotation(pod.GetAnnotations(), k, container)
		if !ok {
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(v))
		dec.KnownFields(true)
		if err := dec.Decode(out); err != nil {
			return k, false, fmt.Errorf("annotation %s of container %q: %w", k, container, err)
		}
		if len(*out) > allow.MaxEntries {
			return k, false, fmt.Errorf("annotation %s of container %q: %d entries, more than the %d allowed", k, container, len(*out), allow.MaxEntries)
		}
		return k, true, nil
	}
	return "", false, nil
}

func (d Device) toAPI() (*api.LinuxDevice, error) {
	if !path.IsAbs(d.Path) {
		return nil, fmt.Errorf("path %q is not absolute", d.Path)
	}
	switch d.Type {
	case "c", "b", "u", "p":
	default:
		return nil, fmt.Errorf("device %s: type %q is not one of c, b, u, p", d.Path, d.Type)
	}
	ld := &api.LinuxDevice{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor}
	if d.FileMode != nil {
		ld.FileMode = &api.OptionalFileMode{Value: *d.FileMode}
	}
	if d.UID != nil {
		ld.Uid = &api.OptionalUInt32{Value: *d.UID}
	}
	if d.GID != nil {
		ld.Gid = &api.OptionalUInt32{Value: *d.GID}
	}
	return ld, nil
}
