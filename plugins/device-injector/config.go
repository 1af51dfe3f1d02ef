package deviceinjector

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/plugins/internal/allow"
)

// Config is the plugin's configuration: what a pod may ask for. The zero
// Config (no configuration) allows nothing: every device, mount and CDI
// device a pod asks for is refused.
type Config struct {
	// Namespaces are the namespaces (patterns) whose pods the plugin
	// serves; empty: every namespace. The plugin leaves the pods of
	// other namespaces alone, whatever their annotations ask.
	Namespaces allow.Namespaces `yaml:"namespaces"`
	// Devices are the device nodes a pod may ask for.
	Devices []DeviceRule `yaml:"devices"`
	// Mounts are the host directories a pod may bind-mount.
	Mounts []MountRule `yaml:"mounts"`
	// CDIDevices are the CDI device names (patterns, such as
	// "nvidia.com/gpu=*") a pod may ask for.
	CDIDevices []string `yaml:"cdiDevices"`
}

// DeviceRule allows device nodes. A device node's path is only its name
// in the container; the device it opens is its type and major and minor
// numbers, so a rule names them too.
type DeviceRule struct {
	// Path is a pattern (path.Match: '*' does not cross '/') over the
	// node's path in the container, such as "/dev/nvidia[0-9]*".
	Path string `yaml:"path"`
	// Type is the node's type: c (character; also allows u), b (block)
	// or p (FIFO).
	Type string `yaml:"type"`
	// Major is the device's major number, required for c and b.
	Major *int64 `yaml:"major"`
	// Minor is the device's minor number; nil allows every minor of
	// Major.
	Minor *int64 `yaml:"minor"`
}

// MountRule allows bind mounts of a host directory and of everything
// under it.
type MountRule struct {
	// Source is the host directory: an absolute, clean path. "/" allows
	// every path of the host, and must be written as such.
	Source string `yaml:"source"`
	// ReadWrite allows read-write mounts; without it a mount must be
	// read-only (options ro or rro).
	ReadWrite bool `yaml:"readWrite"`
}

// MountOptions are the mount options an annotation may use: bind
// flavours, read-only or read-write, nosuid, nodev, noexec, access times,
// and private or slave propagation. Shared propagation (shared, rshared),
// which lets mounts made in the container appear on the host, and every
// other option are refused.
func MountOptions() []string {
	return []string{"bind", "rbind", "ro", "rro", "rw", "nosuid", "nodev", "noexec",
		"noatime", "nodiratime", "relatime", "private", "rprivate", "slave", "rslave"}
}

// ParseConfig decodes and checks a configuration (the runtime's, or the
// file of -config): unknown keys are errors, as are malformed patterns, a
// device rule without its major number and a mount source that is not an
// absolute clean path. The error names the plugin, and the line or the
// field.
func ParseConfig(config string) (Config, error) {
	var c Config
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid device-injector configuration: %w", err)
	}
	if err := c.validate(); err != nil {
		return Config{}, fmt.Errorf("invalid device-injector configuration: %w", err)
	}
	return c, nil
}

func (c *Config) validate() error {
	if err := c.Namespaces.Validate(); err != nil {
		return err
	}
	for i, r := range c.Devices {
		if err := r.validate(); err != nil {
			return fmt.Errorf("devices[%d]: %w", i, err)
		}
	}
	for i, r := range c.Mounts {
		if !path.IsAbs(r.Source) || path.Clean(r.Source) != r.Source {
			return fmt.Errorf("mounts[%d]: source %q is not an absolute clean path (such as /srv/models)", i, r.Source)
		}
	}
	for i, p := range c.CDIDevices {
		if err := allow.CheckPattern(p); err != nil {
			return fmt.Errorf("cdiDevices[%d]: %w", i, err)
		}
	}
	return nil
}

func (r DeviceRule) validate() error {
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("path %q is not an absolute path pattern", r.Path)
	}
	if err := allow.CheckPattern(r.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	}
	switch r.Type {
	case "c", "b":
		if r.Major == nil {
			return fmt.Errorf("major: required for a %s device: the numbers, not the path, are the device the container opens", r.Type)
		}
	case "p":
		if r.Major != nil || r.Minor != nil {
			return fmt.Errorf("a FIFO (type p) has no major or minor number")
		}
	default:
		return fmt.Errorf("type %q is not one of c, b, p", r.Type)
	}
	if (r.Major != nil && *r.Major < 0) || (r.Minor != nil && *r.Minor < 0) {
		return fmt.Errorf("major and minor numbers cannot be negative")
	}
	return nil
}

// CheckDevice returns why d is refused, or "" if a rule allows it.
func (c *Config) CheckDevice(d Device) string {
	if !path.IsAbs(d.Path) || path.Clean(d.Path) != d.Path {
		return "the path is not an absolute clean path"
	}
	if d.FileMode != nil && *d.FileMode&^0o777 != 0 {
		return fmt.Sprintf("file_mode %#o has bits other than the permissions (0777)", *d.FileMode)
	}
	typ := d.Type
	if typ == "u" { // unbuffered character device: a character device
		typ = "c"
	}
	for _, r := range c.Devices {
		if ok, _ := path.Match(r.Path, d.Path); !ok || r.Type != typ {
			continue
		}
		if (r.Major == nil || *r.Major == d.Major) && (r.Minor == nil || *r.Minor == d.Minor) {
			return ""
		}
	}
	return "no rule of the plugin's devices allows this path, type and major and minor numbers"
}

// CheckMount returns why m is refused, or "" if a rule allows it.
func (c *Config) CheckMount(m Mount) string {
	if m.Type != "bind" {
		return fmt.Sprintf("type %q: only bind mounts are injected", m.Type)
	}
	if !path.IsAbs(m.Source) || allow.HasDotDot(m.Source) {
		return "the source is not an absolute path without .. elements"
	}
	if !path.IsAbs(m.Destination) || allow.HasDotDot(m.Destination) {
		return "the destination is not an absolute path without .. elements"
	}
	readOnly, readWrite := false, false
	for _, o := range m.Options {
		switch {
		case o == "ro" || o == "rro":
			readOnly = true
		case o == "rw":
			readWrite = true
		case o == "shared" || o == "rshared":
			return fmt.Sprintf("option %q would propagate the container's mounts to the host", o)
		case !slices.Contains(MountOptions(), o):
			return fmt.Sprintf("option %q is not one of %s", o, strings.Join(MountOptions(), ", "))
		}
	}
	if readOnly && readWrite {
		return "both read-only and read-write"
	}
	// The comparison is on the cleaned string: the plugin does not see
	// the host's file system, so a symbolic link under an allowed
	// directory is followed by the runtime (deploy/README.md, Trust).
	src := path.Clean(m.Source)
	for _, r := range c.Mounts {
		if src != r.Source && !strings.HasPrefix(src, strings.TrimSuffix(r.Source, "/")+"/") {
			continue
		}
		if !readOnly && !r.ReadWrite {
			return fmt.Sprintf("%s may only be mounted read-only (options: [ro])", r.Source)
		}
		return ""
	}
	return "the source is not under a directory of the plugin's mounts"
}

// CheckCDIDevice returns why the CDI device name is refused, or "" if a
// pattern allows it.
func (c *Config) CheckCDIDevice(name string) string {
	if !allow.MatchAny(c.CDIDevices, name) {
		return "no pattern of the plugin's cdiDevices matches the name"
	}
	return ""
}
