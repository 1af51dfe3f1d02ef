package report

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fields flattens an NRI message (a Container, a ContainerAdjustment, a
// ContainerUpdate, ...) into its set fields, by path, with a readable
// value:
//
//   - nested messages by field name: "linux.resources.memory.limit";
//   - map entries by key: "annotations[k]", "linux.sysctl[net.core.somaxconn]";
//   - environment entries ("KEY=VALUE", or an adjustment's KeyValue) by
//     key: "env[KEY]" = "VALUE";
//   - entries of lists with a natural key by that key, as one value:
//     "mounts[/data]" = "source=/srv type=bind options=[rbind ro]", also
//     "linux.devices[/dev/x]", "rlimits[RLIMIT_NOFILE]",
//     "linux.namespaces[network]", "CDI_devices[vendor.com/c=d]" (an entry
//     with nothing but its key has the value "(present)");
//   - other list entries by index: "hooks.prestart[0]", "args[1]";
//   - the Optional* wrappers by their value.
//
// Keys with a removal marker stay as they are ("env[-FOO]").
func Fields(m proto.Message) map[string]string {
	out := map[string]string{}
	if m != nil && m.ProtoReflect().IsValid() {
		flatten(out, "", m.ProtoReflect())
	}
	return out
}

// present is the value of a keyed entry that has nothing but its key
// (such as a CDI device).
const present = "(present)"

// SortedPaths returns the paths of fields in order.
func SortedPaths(fields map[string]string) []string {
	paths := make([]string, 0, len(fields))
	for p := range fields {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// listKey returns the field that keys the entries of a repeated message
// field, by the field's name ("" for entries keyed by index).
func listKey(name protoreflect.Name) protoreflect.Name {
	switch name {
	case "mounts":
		return "destination"
	case "devices":
		return "path"
	case "rlimits", "namespaces":
		return "type"
	case "CDI_devices":
		return "name"
	case "hugepage_limits":
		return "page_size"
	}
	return ""
}

// keyField returns the field that keys the entries of the repeated
// message field fd, or nil.
func keyField(fd protoreflect.FieldDescriptor) protoreflect.FieldDescriptor {
	if fd.Kind() != protoreflect.MessageKind || listKey(fd.Name()) == "" {
		return nil
	}
	return fd.Message().Fields().ByName(listKey(fd.Name()))
}

func join(prefix string, name protoreflect.Name) string {
	if prefix == "" {
		return string(name)
	}
	return prefix + "." + string(name)
}

func flatten(out map[string]string, prefix string, m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		path := join(prefix, fd.Name())
		switch {
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				entry := fmt.Sprintf("%s[%s]", path, k.String())
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					out[entry] = compact(mv.Message())
				} else {
					out[entry] = scalar(fd.MapValue(), mv)
				}
				return true
			})
		case fd.IsList():
			flattenList(out, path, fd, v.List())
		case fd.Kind() == protoreflect.MessageKind:
			if w, ok := wrapped(v.Message()); ok {
				out[path] = w
				return true
			}
			before := len(out)
			flatten(out, path, v.Message())
			if len(out) == before {
				out[path] = "{}"
			}
		default:
			out[path] = scalar(fd, v)
		}
		return true
	})
}

func flattenList(out map[string]string, path string, fd protoreflect.FieldDescriptor, l protoreflect.List) {
	for i := 0; i < l.Len(); i++ {
		item := l.Get(i)
		switch {
		case fd.Name() == "env" && fd.Kind() != protoreflect.MessageKind:
			k, val, _ := strings.Cut(item.String(), "=")
			out[fmt.Sprintf("%s[%s]", path, k)] = val
		case fd.Name() == "env" && fd.Message().Fields().ByName("key") != nil:
			// An adjustment's KeyValue entries.
			msg, fields := item.Message(), fd.Message().Fields()
			out[fmt.Sprintf("%s[%s]", path, msg.Get(fields.ByName("key")).String())] = msg.Get(fields.ByName("value")).String()
		case fd.Kind() != protoreflect.MessageKind:
			out[fmt.Sprintf("%s[%d]", path, i)] = scalar(fd, item)
		case keyField(fd) != nil:
			msg, kf := item.Message(), keyField(fd)
			v := compact(msg, kf.Name())
			if v == "" {
				v = present
			}
			out[fmt.Sprintf("%s[%s]", path, msg.Get(kf).String())] = v
		default:
			out[fmt.Sprintf("%s[%d]", path, i)] = compact(item.Message())
		}
	}
}

// wrapped returns the value of an Optional* wrapper message.
func wrapped(m protoreflect.Message) (string, bool) {
	d := m.Descriptor()
	if !strings.HasPrefix(string(d.Name()), "Optional") || d.Fields().Len() != 1 {
		return "", false
	}
	f := d.Fields().Get(0)
	v := m.Get(f)
	if f.IsList() {
		return listText(f, v.List()), true
	}
	if f.Kind() == protoreflect.Uint32Kind && d.Name() == "OptionalFileMode" {
		return fmt.Sprintf("0%o", v.Uint()), true
	}
	return scalar(f, v), true
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.Kind() == protoreflect.EnumKind {
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
	}
	return v.String()
}

func listText(fd protoreflect.FieldDescriptor, l protoreflect.List) string {
	parts := make([]string, 0, l.Len())
	for i := 0; i < l.Len(); i++ {
		if fd.Kind() == protoreflect.MessageKind {
			parts = append(parts, "{"+compact(l.Get(i).Message())+"}")
		} else {
			parts = append(parts, scalar(fd, l.Get(i)))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// compact renders a message on one line as "field=value ...", leaving out
// the fields named in skip.
func compact(m protoreflect.Message, skip ...protoreflect.Name) string {
	var parts []string
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) || (len(skip) > 0 && fd.Name() == skip[0]) {
			continue
		}
		v := m.Get(fd)
		var s string
		switch {
		case fd.IsMap():
			var kv []string
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				kv = append(kv, k.String()+":"+mv.String())
				return true
			})
			sort.Strings(kv)
			s = "{" + strings.Join(kv, " ") + "}"
		case fd.IsList():
			s = listText(fd, v.List())
		case fd.Kind() == protoreflect.MessageKind:
			if w, ok := wrapped(v.Message()); ok {
				s = w
			} else {
				s = "{" + compact(v.Message()) + "}"
			}
		default:
			s = scalar(fd, v)
		}
		parts = append(parts, string(fd.Name())+"="+s)
	}
	return strings.Join(parts, " ")
}
