package ocispec

import (
	"fmt"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/api"
)

// hookKind pairs one kind of hook in the protocol with its place in the
// OCI spec.
type hookKind struct {
	name  string
	proto func(*api.Hooks) *[]*api.Hook
	oci   func(*rspec.Hooks) *[]rspec.Hook
}

// hookKinds returns every kind of hook, in the spec's order.
func hookKinds() [6]hookKind {
	return [6]hookKind{
		{"prestart", func(h *api.Hooks) *[]*api.Hook { return &h.Prestart },
			//lint:ignore SA1019 prestart hooks are still part of the protocol
			func(h *rspec.Hooks) *[]rspec.Hook { return &h.Prestart }},
		{"create_runtime", func(h *api.Hooks) *[]*api.Hook { return &h.CreateRuntime }, func(h *rspec.Hooks) *[]rspec.Hook { return &h.CreateRuntime }},
		{"create_container", func(h *api.Hooks) *[]*api.Hook { return &h.CreateContainer }, func(h *rspec.Hooks) *[]rspec.Hook { return &h.CreateContainer }},
		{"start_container", func(h *api.Hooks) *[]*api.Hook { return &h.StartContainer }, func(h *rspec.Hooks) *[]rspec.Hook { return &h.StartContainer }},
		{"poststart", func(h *api.Hooks) *[]*api.Hook { return &h.Poststart }, func(h *rspec.Hooks) *[]rspec.Hook { return &h.Poststart }},
		{"poststop", func(h *api.Hooks) *[]*api.Hook { return &h.Poststop }, func(h *rspec.Hooks) *[]rspec.Hook { return &h.Poststop }},
	}
}

// planHooks appends the hooks of every kind.
func planHooks(hooks *api.Hooks) (step, error) {
	if hooks == nil {
		return nil, nil
	}
	kinds := hookKinds()
	add := make([][]rspec.Hook, len(kinds))
	n := 0
	for i, k := range kinds {
		for j, h := range *k.proto(hooks) {
			if h.GetPath() == "" {
				return nil, invalidf(fmt.Sprintf("hooks.%s[%d].path", k.name, j), "empty hook path")
			}
			add[i] = append(add[i], hookToOCI(h))
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	return func(s *rspec.Spec) error {
		if s.Hooks == nil {
			s.Hooks = &rspec.Hooks{}
		}
		for i, k := range kinds {
			if len(add[i]) > 0 {
				dst := k.oci(s.Hooks)
				*dst = append(*dst, add[i]...)
			}
		}
		return nil
	}, nil
}

// hookToOCI converts a protocol hook.
func hookToOCI(h *api.Hook) rspec.Hook {
	o := rspec.Hook{
		Path: h.GetPath(),
		Args: slices.Clone(h.GetArgs()),
		Env:  slices.Clone(h.GetEnv()),
	}
	if t := h.GetTimeout(); t != nil {
		v := int(t.GetValue())
		o.Timeout = &v
	}
	return o
}

// hooksFromOCI converts the spec's hooks (nil for nil).
func hooksFromOCI(o *rspec.Hooks) *api.Hooks {
	if o == nil {
		return nil
	}
	h := &api.Hooks{}
	for _, k := range hookKinds() {
		dst := k.proto(h)
		for _, oh := range *k.oci(o) {
			p := &api.Hook{Path: oh.Path, Args: slices.Clone(oh.Args), Env: slices.Clone(oh.Env)}
			if oh.Timeout != nil {
				p.Timeout = &api.OptionalInt{Value: int64(*oh.Timeout)}
			}
			*dst = append(*dst, p)
		}
	}
	return h
}
