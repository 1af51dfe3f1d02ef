package merge

import "github.com/nrikit/nrikit/api"

// Allocating accessors for sub-messages of the merged result: they are
// created when something is first set in them, so untouched parts stay
// nil. Those of the container view are in view.go (they copy on write).

// ensure returns *p, allocated if nil.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

func ensureMap[V any](m *map[string]V) map[string]V {
	if *m == nil {
		*m = make(map[string]V)
	}
	return *m
}

func adjLinux(a *api.ContainerAdjustment) *api.LinuxContainerAdjustment {
	if a.Linux == nil {
		a.Linux = &api.LinuxContainerAdjustment{}
	}
	return a.Linux
}

func adjResources(a *api.ContainerAdjustment) *api.LinuxResources {
	l := adjLinux(a)
	if l.Resources == nil {
		l.Resources = &api.LinuxResources{}
	}
	return l.Resources
}

func adjHooks(a *api.ContainerAdjustment) *api.Hooks {
	if a.Hooks == nil {
		a.Hooks = &api.Hooks{}
	}
	return a.Hooks
}

func adjRdt(a *api.ContainerAdjustment) *api.LinuxRdt {
	l := adjLinux(a)
	if l.Rdt == nil {
		l.Rdt = &api.LinuxRdt{}
	}
	return l.Rdt
}

func updResources(u *api.ContainerUpdate) *api.LinuxResources {
	if u.Linux == nil {
		u.Linux = &api.LinuxContainerUpdate{}
	}
	if u.Linux.Resources == nil {
		u.Linux.Resources = &api.LinuxResources{}
	}
	return u.Linux.Resources
}
