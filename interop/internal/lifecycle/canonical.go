package lifecycle

import (
	"cmp"
	"slices"

	"github.com/nrikit/nrikit/api"
)

// Canonical returns a copy of a with its keyed lists (mounts, environment,
// devices, namespaces) sorted by key and without removal markers of
// environment variables and devices: a merged adjustment lists additions
// before removals, and reports the removal of an environment variable or
// a device only by its effect on the container, as upstream's runtime
// does, so only this form of a plugin's answer equals the merged result of
// that answer alone.
func Canonical(a *api.ContainerAdjustment) *api.ContainerAdjustment {
	c := api.Clone(a)
	if c == nil {
		return nil
	}
	slices.SortStableFunc(c.Mounts, func(x, y *api.Mount) int { return cmp.Compare(x.Destination, y.Destination) })
	c.Env = slices.DeleteFunc(c.Env, func(e *api.KeyValue) bool { _, rm := e.IsMarkedForRemoval(); return rm })
	slices.SortStableFunc(c.Env, func(x, y *api.KeyValue) int { return cmp.Compare(x.Key, y.Key) })
	if l := c.Linux; l != nil {
		l.Devices = slices.DeleteFunc(l.Devices, func(d *api.LinuxDevice) bool { _, rm := d.IsMarkedForRemoval(); return rm })
		slices.SortStableFunc(l.Devices, func(x, y *api.LinuxDevice) int { return cmp.Compare(x.Path, y.Path) })
		slices.SortStableFunc(l.Namespaces, func(x, y *api.LinuxNamespace) int { return cmp.Compare(x.Type, y.Type) })
	}
	return c
}
