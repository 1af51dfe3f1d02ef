package api_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
)

// TestFieldTableCoversProto checks the generated field table against the
// compiled descriptors: every Field value has a row whose path is a field
// of ContainerAdjustment, and every field of ContainerAdjustment is owned
// by a row or listed as unowned. A proto field without its row (or a
// stale fields_generated.go) fails here.
func TestFieldTableCoversProto(t *testing.T) {
	adjust := (&api.ContainerAdjustment{}).ProtoReflect().Descriptor()
	rows := map[string]api.FieldInfo{}
	values := api.Field(0).Descriptor().Values()
	for i := range values.Len() {
		f := api.Field(values.Get(i).Number())
		if f == api.Field_None {
			continue
		}
		info, ok := f.Info()
		if !ok || info.Field != f || info.Name == "" || info.Capability == "" {
			t.Errorf("Field %s has no complete row: %+v", f, info)
			continue
		}
		if fieldAt(adjust, info.Path) == nil {
			t.Errorf("Field %s: path %q is not in ContainerAdjustment", f, info.Path)
		}
		if (info.Owner == api.OwnedPerEntry) != (info.Key != "") {
			t.Errorf("Field %s: owner kind %d with key %q", f, info.Owner, info.Key)
		}
		rows[info.Path] = info
	}
	if n := len(api.FieldTable()); n != values.Len()-1 {
		t.Errorf("FieldTable has %d rows, enum Field %d values", n, values.Len()-1)
	}
	unowned := api.UnownedPaths()
	var walk func(m protoreflect.MessageDescriptor, prefix string)
	walk = func(m protoreflect.MessageDescriptor, prefix string) {
		for i := range m.Fields().Len() {
			fd := m.Fields().Get(i)
			path := prefix + string(fd.Name())
			if _, ok := rows[path]; ok || slices.Contains(unowned, path) {
				continue
			}
			sub := fd.Message()
			if sub == nil || fd.IsList() || fd.IsMap() || strings.HasPrefix(string(sub.Name()), "Optional") {
				t.Errorf("adjustment field %s has no row in the field table", path)
				continue
			}
			walk(sub, path+".")
		}
	}
	walk(adjust, "")
}

// TestCapabilityTableCoversProto checks that each row of the capability
// table is a field of ContainerAdjustment or ContainerUpdate, and that
// each Field belongs to an adjustment capability.
func TestCapabilityTableCoversProto(t *testing.T) {
	adjust := (&api.ContainerAdjustment{}).ProtoReflect().Descriptor()
	update := (&api.ContainerUpdate{}).ProtoReflect().Descriptor()
	caps := map[string]bool{}
	for _, c := range api.CapabilityTable() {
		root := adjust
		if c.Update {
			root = update
		}
		if fieldAt(root, c.Path) == nil {
			t.Errorf("capability %s: path %q not found", c.Name, c.Path)
		}
		if !c.Update {
			caps[c.Name] = true
		}
	}
	for _, info := range api.FieldTable() {
		if !caps[info.Capability] {
			t.Errorf("Field %s: capability %q is not an adjustment capability", info.Field, info.Capability)
		}
	}
}

func TestHumanName(t *testing.T) {
	for f, want := range map[api.Field]string{
		api.Field_MemLimit: "memory limit",
		api.Field_Env:      "env",
		api.Field_OciHooks: "OCI hooks",
		api.Field_None:     "None",
		api.Field(1 << 20): "1048576",
	} {
		if got := f.HumanName(); got != want {
			t.Errorf("%d: HumanName() = %q, want %q", f, got, want)
		}
	}
}

// fieldAt returns the field at a dotted path of proto names under m.
func fieldAt(m protoreflect.MessageDescriptor, path string) protoreflect.FieldDescriptor {
	var fd protoreflect.FieldDescriptor
	for name := range strings.SplitSeq(path, ".") {
		if m == nil {
			return nil
		}
		if fd = m.Fields().ByName(protoreflect.Name(name)); fd == nil {
			return nil
		}
		m = fd.Message()
	}
	return fd
}
