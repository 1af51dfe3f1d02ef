// Package wirecheck compares two protobuf schemas for wire identity: it
// reports every way in which a schema ("ours") fails to be a wire-identical
// superset of a reference schema ("upstream"), given nrikit's rule that
// additions are allowed only as new messages or as fields numbered in the
// extension range.
//
// It is used by the api package's tests against a descriptor of upstream's
// schema committed as test data, and by the interoperability module against
// upstream's own compiled descriptors.
package wirecheck

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Rules tells Compare which additions are allowed.
type Rules struct {
	// ExtensionMin and ExtensionMax bound the field numbers that ours may
	// add to messages that exist upstream.
	ExtensionMin, ExtensionMax protoreflect.FieldNumber
}

// Compare returns the differences that break wire identity between
// upstream and ours, sorted, one human-readable line each; an empty result
// means every service, method, message, field and enum value of upstream
// exists identically in ours and ours adds only what the rules allow.
func Compare(upstream, ours protoreflect.FileDescriptor, rules Rules) []string {
	c := &comparer{rules: rules}
	if upstream.Package() != ours.Package() {
		c.addf("package: upstream %q, ours %q", upstream.Package(), ours.Package())
	}
	c.services(upstream, ours)
	c.messages(upstream.Messages(), ours.Messages(), lookupMessages(ours))
	c.enums(upstream.Enums(), ours.Enums())
	sort.Strings(c.diffs)
	return c.diffs
}

type comparer struct {
	rules Rules
	diffs []string
}

func (c *comparer) addf(format string, args ...any) {
	c.diffs = append(c.diffs, fmt.Sprintf(format, args...))
}

func (c *comparer) services(upstream, ours protoreflect.FileDescriptor) {
	for i := 0; i < upstream.Services().Len(); i++ {
		us := upstream.Services().Get(i)
		os := ours.Services().ByName(us.Name())
		if os == nil {
			c.addf("service %s: missing", us.FullName())
			continue
		}
		for j := 0; j < us.Methods().Len(); j++ {
			um := us.Methods().Get(j)
			om := os.Methods().ByName(um.Name())
			if om == nil {
				c.addf("method %s: missing", um.FullName())
				continue
			}
			if um.Input().FullName() != om.Input().FullName() {
				c.addf("method %s: input upstream %s, ours %s", um.FullName(), um.Input().FullName(), om.Input().FullName())
			}
			if um.Output().FullName() != om.Output().FullName() {
				c.addf("method %s: output upstream %s, ours %s", um.FullName(), um.Output().FullName(), om.Output().FullName())
			}
			if um.IsStreamingClient() != om.IsStreamingClient() || um.IsStreamingServer() != om.IsStreamingServer() {
				c.addf("method %s: streaming differs", um.FullName())
			}
		}
		for j := 0; j < os.Methods().Len(); j++ {
			if om := os.Methods().Get(j); us.Methods().ByName(om.Name()) == nil {
				c.addf("method %s: added to an upstream service (upstream peers cannot serve it)", om.FullName())
			}
		}
	}
}

// lookupMessages indexes every message of a file, nested ones included,
// by full name.
func lookupMessages(fd protoreflect.FileDescriptor) map[protoreflect.FullName]protoreflect.MessageDescriptor {
	all := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var walk func(protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			all[m.FullName()] = m
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	return all
}

func (c *comparer) messages(upstream, _ protoreflect.MessageDescriptors, ours map[protoreflect.FullName]protoreflect.MessageDescriptor) {
	for i := 0; i < upstream.Len(); i++ {
		um := upstream.Get(i)
		om, ok := ours[um.FullName()]
		if !ok {
			c.addf("message %s: missing", um.FullName())
			continue
		}
		c.message(um, om)
		c.messages(um.Messages(), om.Messages(), ours)
		c.enums(um.Enums(), om.Enums())
	}
}

func (c *comparer) message(um, om protoreflect.MessageDescriptor) {
	if um.IsMapEntry() != om.IsMapEntry() {
		c.addf("message %s: map entry upstream %v, ours %v", um.FullName(), um.IsMapEntry(), om.IsMapEntry())
	}
	for i := 0; i < um.Fields().Len(); i++ {
		uf := um.Fields().Get(i)
		of := om.Fields().ByNumber(uf.Number())
		if of == nil {
			c.addf("field %s = %d: missing", uf.FullName(), uf.Number())
			continue
		}
		c.field(uf, of)
	}
	for i := 0; i < om.Fields().Len(); i++ {
		of := om.Fields().Get(i)
		if um.Fields().ByNumber(of.Number()) != nil {
			continue
		}
		if of.Number() < c.rules.ExtensionMin || of.Number() > c.rules.ExtensionMax {
			c.addf("field %s = %d: added outside the extension range %d-%d",
				of.FullName(), of.Number(), c.rules.ExtensionMin, c.rules.ExtensionMax)
		}
	}
}

func (c *comparer) field(uf, of protoreflect.FieldDescriptor) {
	name := fmt.Sprintf("field %s = %d", uf.FullName(), uf.Number())
	if uf.Name() != of.Name() {
		c.addf("%s: name upstream %s, ours %s", name, uf.Name(), of.Name())
	}
	if uf.Kind() != of.Kind() {
		c.addf("%s: type upstream %s, ours %s", name, uf.Kind(), of.Kind())
	}
	if uf.Cardinality() != of.Cardinality() {
		c.addf("%s: cardinality upstream %s, ours %s", name, uf.Cardinality(), of.Cardinality())
	}
	if uf.IsPacked() != of.IsPacked() {
		c.addf("%s: packed upstream %v, ours %v", name, uf.IsPacked(), of.IsPacked())
	}
	if uf.HasPresence() != of.HasPresence() {
		c.addf("%s: presence upstream %v, ours %v", name, uf.HasPresence(), of.HasPresence())
	}
	if um, om := uf.Message(), of.Message(); um != nil && om != nil && um.FullName() != om.FullName() {
		c.addf("%s: message type upstream %s, ours %s", name, um.FullName(), om.FullName())
	}
	if ue, oe := uf.Enum(), of.Enum(); ue != nil && oe != nil && ue.FullName() != oe.FullName() {
		c.addf("%s: enum type upstream %s, ours %s", name, ue.FullName(), oe.FullName())
	}
}

func (c *comparer) enums(upstream, ours protoreflect.EnumDescriptors) {
	for i := 0; i < upstream.Len(); i++ {
		ue := upstream.Get(i)
		oe := ours.ByName(ue.Name())
		if oe == nil {
			c.addf("enum %s: missing", ue.FullName())
			continue
		}
		for j := 0; j < ue.Values().Len(); j++ {
			uv := ue.Values().Get(j)
			ov := oe.Values().ByName(uv.Name())
			switch {
			case ov == nil:
				c.addf("enum %s value %s = %d: missing", ue.FullName(), uv.Name(), uv.Number())
			case ov.Number() != uv.Number():
				c.addf("enum %s value %s: upstream %d, ours %d", ue.FullName(), uv.Name(), uv.Number(), ov.Number())
			}
		}
		for j := 0; j < oe.Values().Len(); j++ {
			if ov := oe.Values().Get(j); ue.Values().ByName(ov.Name()) == nil {
				c.addf("enum %s value %s = %d: added to an upstream enum", ue.FullName(), ov.Name(), ov.Number())
			}
		}
	}
}
