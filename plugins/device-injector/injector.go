// Package deviceinjector is a sample NRI plugin that injects device
// nodes, mounts and CDI devices into containers, as requested by pod
// annotations. It follows the annotation conventions of containerd/nri's
// device-injector sample:
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
// An annotation that cannot be parsed fails the container's creation with
// an error naming the annotation.
package deviceinjector

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
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

// Mount is a mount, as written in the annotation.
type Mount struct {
	Source      string   `yaml:"source"`
	Destination string   `yaml:"destination"`
	Type        string   `yaml:"type"`
	Options     []string `yaml:"options"`
}

// Plugin injects annotated devices and mounts. It is stateless.
type Plugin struct {
	log *slog.Logger
}

// New returns the plugin.
func New(log *slog.Logger) *Plugin { return &Plugin{log: log} }

// CreateContainer injects what the pod's annotations ask for.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj, err := Adjustment(pod, ctr.GetName())
	if err != nil {
		return nil, nil, err
	}
	if adj != nil {
		p.log.Info("injecting", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(),
			"devices", len(adj.GetLinux().GetDevices()), "mounts", len(adj.GetMounts()), "cdi-devices", len(adj.GetCDIDevices()))
	}
	return adj, nil, nil
}

// Adjustment returns the changes the pod's annotations ask for in
// container, or nil if none.
func Adjustment(pod *api.PodSandbox, container string) (*api.ContainerAdjustment, error) {
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
			adj.AddDevice(ld)
			changed = true
		}
	}
	var mounts []Mount
	if key, ok, err := decode(pod, MountAnnotation, container, &mounts); err != nil {
		return nil, err
	} else if ok {
		for i, m := range mounts {
			if !path.IsAbs(m.Destination) {
				return nil, fmt.Errorf("annotation %s: mount %d: destination %q is not an absolute path", key, i+1, m.Destination)
			}
			adj.AddMount(&api.Mount{Source: m.Source, Destination: m.Destination, Type: m.Type, Options: m.Options})
			changed = true
		}
	}
	var cdi []string
	if key, ok, err := decode(pod, CDIDeviceAnnotation, container, &cdi); err != nil {
		return nil, err
	} else if ok {
		for _, name := range cdi {
			if vendorClass, dev, ok := strings.Cut(name, "="); !ok || !strings.Contains(vendorClass, "/") || dev == "" {
				return nil, fmt.Errorf("annotation %s: %q is not a CDI device name (vendor.com/class=device)", key, name)
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
// first, then the legacy one) and decodes its YAML value into out. It
// returns the annotation's key and whether one was found.
func decode(pod *api.PodSandbox, key, container string, out any) (string, bool, error) {
	for _, k := range []string{key, strings.TrimSuffix(key, "noderesource.dev") + LegacyDomain} {
		v, ok := api.EffectiveAnnotation(pod, k, container)
		if !ok {
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(v))
		dec.KnownFields(true)
		if err := dec.Decode(out); err != nil {
			return k, false, fmt.Errorf("annotation %s of container %q: %w", k, container, err)
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

// Config is the plugin's configuration: it takes none, so any key is an
// error (ParseConfig).
type Config struct{}

// ParseConfig checks a configuration (the runtime's, or the file of
// -config): this plugin takes none, so anything but an empty document or
// comments is refused, naming the key.
func ParseConfig(config string) (Config, error) {
	var c Config
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid device-injector configuration: %w", err)
	}
	return c, nil
}

// Configure refuses a configuration: the plugin takes none (ParseConfig).
func (p *Plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	_, err := ParseConfig(config)
	return 0, err
}
