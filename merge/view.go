package merge

import (
	"maps"

	"github.com/nrikit/nrikit/api"
)

// The container view (Create.Container) is copied on write. NewCreate
// makes a shallow copy of the caller's container: a new Container whose
// fields are those of the original, sharing the maps, slices and
// sub-messages beneath. The first change the merge makes to a part of the
// view copies that part (see Create.own), so the caller's container is
// never written and a plugin adding one environment variable costs a copy
// of the environment only.

// viewPart is one separately copied part of the container view; a set of
// them (a bitmask) records which parts a Create owns.
type viewPart uint8

const (
	partAnnotations viewPart = 1 << iota
	partMounts
	partEnv
	partHooks
	partRlimits
	partLinux // the whole Linux subtree: resources, devices, namespaces, ...
)

// Args need no part: the merge only ever replaces the view's command line
// with a new slice, it never changes one in place.

// viewHeadroom is how many entries a copied list gets room for beyond the
// original's, so the append that follows the copy does not reallocate.
const viewHeadroom = 4

// shallowCopy returns a new Container with the fields of ctr, sharing
// everything beneath them with ctr. The fields are assigned one by one: a
// protobuf message struct must not be copied as a value. Unknown fields
// are kept, as a deep copy would.
func shallowCopy(ctr *api.Container) *api.Container {
	if ctr == nil {
		return &api.Container{}
	}
	v := &api.Container{
		Id:            ctr.Id,
		PodSandboxId:  ctr.PodSandboxId,
		Name:          ctr.Name,
		State:         ctr.State,
		Labels:        ctr.Labels,
		Annotations:   ctr.Annotations,
		Args:          ctr.Args,
		Env:           ctr.Env,
		Mounts:        ctr.Mounts,
		Hooks:         ctr.Hooks,
		Linux:         ctr.Linux,
		Pid:           ctr.Pid,
		Rlimits:       ctr.Rlimits,
		CreatedAt:     ctr.CreatedAt,
		StartedAt:     ctr.StartedAt,
		FinishedAt:    ctr.FinishedAt,
		ExitCode:      ctr.ExitCode,
		StatusReason:  ctr.StatusReason,
		StatusMessage: ctr.StatusMessage,
		CDIDevices:    ctr.CDIDevices,
		User:          ctr.User,
		Image:         ctr.Image,
	}
	if u := ctr.ProtoReflect().GetUnknown(); len(u) > 0 {
		v.ProtoReflect().SetUnknown(u)
	}
	return v
}

// own makes part p of the view c's own, copying it from the caller's
// container the first time, and returns the view. Every change to the
// view goes through own (or the accessors below).
func (c *Create) own(p viewPart) *api.Container {
	v := c.ctr
	if c.owned&p != 0 {
		return v
	}
	c.owned |= p
	switch p {
	case partAnnotations:
		v.Annotations = maps.Clone(v.Annotations) // values are strings
	case partMounts:
		// The entries stay shared: the merge removes and appends
		// entries, it never changes one.
		v.Mounts = cloneGrow(v.Mounts)
	case partEnv:
		v.Env = cloneGrow(v.Env) // strings are immutable
	case partHooks:
		v.Hooks = api.Clone(v.Hooks)
	case partRlimits:
		v.Rlimits = cloneGrow(v.Rlimits) // entries are only appended
	case partLinux:
		// Rare: one deep copy of the subtree rather than one per
		// sub-message.
		v.Linux = api.Clone(v.Linux)
	}
	return v
}

// cloneGrow copies s with room for viewHeadroom more entries.
func cloneGrow[S ~[]E, E any](s S) S {
	if s == nil {
		return nil
	}
	return append(make(S, 0, len(s)+viewHeadroom), s...)
}

// viewLinux returns the view's Linux part, owned by c.
func (c *Create) viewLinux() *api.LinuxContainer {
	v := c.own(partLinux)
	if v.Linux == nil {
		v.Linux = &api.LinuxContainer{}
	}
	return v.Linux
}

// viewResources returns the view's Linux resources, owned by c.
func (c *Create) viewResources() *api.LinuxResources {
	l := c.viewLinux()
	if l.Resources == nil {
		l.Resources = &api.LinuxResources{}
	}
	return l.Resources
}

// viewHooks returns the view's OCI hooks, owned by c.
func (c *Create) viewHooks() *api.Hooks {
	v := c.own(partHooks)
	if v.Hooks == nil {
		v.Hooks = &api.Hooks{}
	}
	return v.Hooks
}
