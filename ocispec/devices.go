package ocispec

import (
	"fmt"
	"slices"
	"strings"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// OCI device node types.
const (
	devChar       = "c"
	devUnbuffered = "u"
	devBlock      = "b"
	devFIFO       = "p"
)

// deviceOp is one validated device adjustment: remove the device at path,
// and unless remove is set, add dev (and rule, if any) in its place.
type deviceOp struct {
	path   string
	remove bool
	dev    rspec.LinuxDevice
	rule   *rspec.LinuxDeviceCgroup
}

// planDevices replaces devices by path and removes them ("-/dev/x"). Every
// added device also gets a device cgroup allow rule.
func planDevices(devices []*api.LinuxDevice) (step, error) {
	if len(devices) == 0 {
		return nil, nil
	}
	ops := make([]deviceOp, 0, len(devices))
	for i, d := range devices {
		p, marked := d.IsMarkedForRemoval()
		field := fmt.Sprintf("linux.devices[%d]", i)
		if p == "" {
			return nil, invalidf(field+".path", "empty device path")
		}
		op := deviceOp{path: p, remove: marked}
		if !marked {
			var err error
			if op.dev, op.rule, err = deviceToOCI(field, d); err != nil {
				return nil, err
			}
		}
		ops = append(ops, op)
	}
	return func(s *rspec.Spec) error {
		for _, op := range ops {
			l := ensureLinux(s)
			l.Devices = slices.DeleteFunc(l.Devices, func(d rspec.LinuxDevice) bool { return d.Path == op.path })
			if op.remove {
				continue
			}
			l.Devices = append(l.Devices, op.dev)
			if op.rule != nil {
				r := ensureResources(s)
				r.Devices = append(r.Devices, *op.rule)
			}
		}
		return nil
	}, nil
}

// deviceToOCI validates and converts a protocol device and derives its
// device cgroup allow rule (nil for FIFOs, which the device cgroup does
// not control).
func deviceToOCI(field string, d *api.LinuxDevice) (rspec.LinuxDevice, *rspec.LinuxDeviceCgroup, error) {
	o := rspec.LinuxDevice{
		Path:     d.GetPath(),
		Type:     d.GetType(),
		Major:    d.GetMajor(),
		Minor:    d.GetMinor(),
		FileMode: d.GetFileMode().Get(),
		UID:      d.GetUid().Get(),
		GID:      d.GetGid().Get(),
	}
	ruleType, access := "", "rw"
	switch o.Type {
	case devChar, devUnbuffered:
		ruleType = devChar
	case devBlock:
		ruleType, access = devBlock, "rwm"
	case devFIFO:
		return o, nil, nil
	default:
		return o, nil, invalidf(field+".type", "unknown device type %q (want c, b, u or p)", o.Type)
	}
	if o.Major < 0 || o.Minor < 0 {
		return o, nil, invalidf(field, "negative device number %d:%d", o.Major, o.Minor)
	}
	major, minor := o.Major, o.Minor
	return o, &rspec.LinuxDeviceCgroup{Allow: true, Type: ruleType, Major: &major, Minor: &minor, Access: access}, nil
}

// checkDeviceRule validates a device cgroup rule from the protocol.
func checkDeviceRule(field string, r *api.LinuxDeviceCgroup) error {
	switch r.GetType() {
	case "", "a", devChar, devBlock:
	default:
		return invalidf(field+".type", "unknown device cgroup rule type %q (want a, b or c)", r.GetType())
	}
	if strings.Trim(r.GetAccess(), "rwm") != "" {
		return invalidf(field+".access", "bad access %q (want a combination of r, w and m)", r.GetAccess())
	}
	return nil
}

// devicesFromOCI converts the spec's devices.
func devicesFromOCI(o []rspec.LinuxDevice) []*api.LinuxDevice {
	var out []*api.LinuxDevice
	for _, d := range o {
		p := &api.LinuxDevice{Path: d.Path, Type: d.Type, Major: d.Major, Minor: d.Minor}
		if d.FileMode != nil {
			p.FileMode = &api.OptionalFileMode{Value: uint32(*d.FileMode)}
		}
		if d.UID != nil {
			p.Uid = &api.OptionalUInt32{Value: *d.UID}
		}
		if d.GID != nil {
			p.Gid = &api.OptionalUInt32{Value: *d.GID}
		}
		out = append(out, p)
	}
	return out
}
