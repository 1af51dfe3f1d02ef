package ocispec

import (
	"reflect"
	"strings"
	"testing"

	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
)

// fullAdjustment returns an adjustment that sets every field of api's
// field table: the one that recreates richSpec, and the fields a spec
// read back cannot carry.
func fullAdjustment() *api.ContainerAdjustment {
	adj := adjustmentFrom(ToContainer(richSpec(), ContainerMeta{ID: "c"}))
	mem := adj.Linux.Resources.Memory
	mem.Kernel, mem.KernelTcp = api.Int64(1<<20), api.Int64(1<<19)
	mem.DisableOomKiller, mem.UseHierarchy = api.Bool(true), api.Bool(true)
	adj.Linux.Resources.BlockioClass, adj.Linux.Resources.RdtClass = api.String("slow"), api.String("silver")
	adj.Linux.MemoryPolicy = &api.LinuxMemoryPolicy{Mode: api.MpolMode_MPOL_BIND, Nodes: "0"}
	return adj
}

// TestApplyCoversEveryField checks, for each field of api's field table,
// that Apply does something with it: the spec differs when the field is
// cleared. A field added to the proto (and so to the table) that Apply
// leaves out fails here, as does a fixture that does not set it.
func TestApplyCoversEveryField(t *testing.T) {
	full := fullAdjustment()
	// The runtime's resolvers and injector, so that classes and CDI
	// devices leave a mark of their own in the spec.
	opts := []Option{
		WithBlockIOClassResolver(func(class string) (*rspec.LinuxBlockIO, error) {
			return &rspec.LinuxBlockIO{Weight: ptr(uint16(len(class)))}, nil
		}),
		WithRDTClassResolver(func(class string) (*rspec.LinuxIntelRdt, error) {
			return &rspec.LinuxIntelRdt{ClosID: class, L3CacheSchema: "from class"}, nil
		}),
		WithCDIDeviceInjector(func(s *rspec.Spec, devices []string) error {
			s.Process.Env = append(s.Process.Env, "CDI="+strings.Join(devices, ","))
			return nil
		}),
	}
	want := &rspec.Spec{}
	if err := Apply(want, full, opts...); err != nil {
		t.Fatalf("Apply of the full adjustment: %v", err)
	}
	for _, f := range api.FieldTable() {
		without := proto.Clone(full).(*api.ContainerAdjustment)
		if !clearPath(without.ProtoReflect(), f.Path) {
			t.Errorf("%s (%s): the test's adjustment does not set it; add it to fullAdjustment", f.Field, f.Path)
			continue
		}
		got := &rspec.Spec{}
		if err := Apply(got, without, opts...); err != nil {
			t.Errorf("%s: Apply without it: %v", f.Field, err)
			continue
		}
		if reflect.DeepEqual(got, want) {
			t.Errorf("%s (%s): Apply makes the same spec with and without it; does Apply plan it?", f.Field, f.Path)
		}
	}
}

// clearPath clears the field at a dotted path of proto names under m and
// reports whether it was set.
func clearPath(m protoreflect.Message, path string) bool {
	names := strings.Split(path, ".")
	for _, name := range names[:len(names)-1] {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil || !m.Has(fd) {
			return false
		}
		m = m.Mutable(fd).Message()
	}
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(names[len(names)-1]))
	if fd == nil || !m.Has(fd) {
		return false
	}
	m.Clear(fd)
	return true
}
