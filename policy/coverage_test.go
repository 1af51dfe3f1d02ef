package policy

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// adjustFields maps every field of the adjustment messages (full proto
// names) to the capability a change of it is checked as. A message
// listed in descend is walked into instead: each of its fields must be
// here. A field missing from both fails TestEveryFieldHasARule, so that
// a field added upstream cannot slip through the engine unchecked.
var adjustFields = map[protoreflect.FullName]capability.Capability{
	"nri.pkg.api.v1alpha1.ContainerAdjustment.annotations":         capability.Annotations,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.mounts":              capability.Mounts,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.env":                 capability.Env,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.hooks":               capability.Hooks,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.rlimits":             capability.Rlimits,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.CDI_devices":         capability.CDIDevices,
	"nri.pkg.api.v1alpha1.ContainerAdjustment.args":                capability.Args,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.devices":        capability.Devices,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.cgroups_path":   capability.CgroupsPath,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.oom_score_adj":  capability.OOMScoreAdj,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.io_priority":    capability.IOPriority,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.seccomp_policy": capability.SeccompPolicy,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.namespaces":     capability.Namespaces,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.sysctl":         capability.Sysctl,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.net_devices":    capability.NetDevices,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.scheduler":      capability.Scheduler,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.rdt":            capability.Rdt,
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment.memory_policy":  capability.MemoryPolicy,
	"nri.pkg.api.v1alpha1.LinuxResources.hugepage_limits":          capability.HugepageLimits,
	"nri.pkg.api.v1alpha1.LinuxResources.blockio_class":            capability.BlockioClass,
	"nri.pkg.api.v1alpha1.LinuxResources.rdt_class":                capability.RdtClass,
	"nri.pkg.api.v1alpha1.LinuxResources.unified":                  capability.Unified,
	"nri.pkg.api.v1alpha1.LinuxResources.devices":                  capability.DeviceCgroup,
	"nri.pkg.api.v1alpha1.LinuxResources.pids":                     capability.Pids,
	"nri.pkg.api.v1alpha1.LinuxMemory.limit":                       capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.reservation":                 capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.swap":                        capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.kernel":                      capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.kernel_tcp":                  capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.swappiness":                  capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.disable_oom_killer":          capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxMemory.use_hierarchy":               capability.Memory,
	"nri.pkg.api.v1alpha1.LinuxCPU.shares":                         capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.quota":                          capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.period":                         capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.realtime_runtime":               capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.realtime_period":                capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.cpus":                           capability.CPU,
	"nri.pkg.api.v1alpha1.LinuxCPU.mems":                           capability.CPU,
}

// notChanges are fields of an update that identify or qualify it rather
// than change anything.
var notChanges = map[protoreflect.FullName]bool{
	"nri.pkg.api.v1alpha1.ContainerUpdate.container_id":   true,
	"nri.pkg.api.v1alpha1.ContainerUpdate.ignore_failure": true,
}

// descend are the messages whose fields are checked one by one.
var descend = map[protoreflect.FullName]bool{
	"nri.pkg.api.v1alpha1.LinuxContainerAdjustment": true,
	"nri.pkg.api.v1alpha1.LinuxResources":           true,
	"nri.pkg.api.v1alpha1.LinuxMemory":              true,
	"nri.pkg.api.v1alpha1.LinuxCPU":                 true,
	"nri.pkg.api.v1alpha1.LinuxContainerUpdate":     true,
}

// updateOf maps an adjustment's resource capability to the update's.
var updateOf = map[capability.Capability]capability.Capability{capability.Memory: capability.UpdateMemory, capability.CPU: capability.UpdateCPU, capability.HugepageLimits: capability.UpdateHugepageLimits,
	capability.BlockioClass: capability.UpdateBlockioClass, capability.RdtClass: capability.UpdateRdtClass, capability.Unified: capability.UpdateUnified, capability.DeviceCgroup: capability.UpdateDeviceCgroup, capability.Pids: capability.UpdatePids}

// populate sets every field of m to a value that is not the default,
// recursively (to a small depth).
func populate(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		populateField(m, fields.Get(i), depth)
	}
}

func populateField(m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) {
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		v := mp.NewValue()
		if fd.MapValue().Kind() == protoreflect.MessageKind {
			populate(v.Message(), depth+1)
		} else {
			v = scalar(fd.MapValue())
		}
		mp.Set(scalar(fd.MapKey()).MapKey(), v)
	case fd.IsList():
		l := m.Mutable(fd).List()
		if fd.Kind() == protoreflect.MessageKind {
			e := l.NewElement()
			if depth < 4 {
				populate(e.Message(), depth+1)
			}
			l.Append(e)
		} else {
			l.Append(scalar(fd))
		}
	case fd.Kind() == protoreflect.MessageKind:
		if depth < 4 {
			populate(m.Mutable(fd).Message(), depth+1)
		} else {
			m.Mutable(fd)
		}
	default:
		m.Set(fd, scalar(fd))
	}
}

// scalar is a value of fd's kind that is not the default.
func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	}
	return protoreflect.ValueOfFloat64(7)
}

// TestEveryFieldHasARule walks the descriptors of ContainerAdjustment
// and ContainerUpdate: for every field (every field of the messages in
// descend) it builds an adjustment or update that sets only that field,
// and checks that a grant of nothing refuses it as the field's
// capability and that no policy allows it. A field the engine does not
// know fails the test.
func TestEveryFieldHasARule(t *testing.T) {
	nothing := mustParse(t, "").GrantFor("10", "x")
	seen := map[protoreflect.FullName]bool{}
	var walk func(root proto.Message, path []protoreflect.FieldDescriptor, md protoreflect.MessageDescriptor, update bool)
	walk = func(root proto.Message, path []protoreflect.FieldDescriptor, md protoreflect.MessageDescriptor, update bool) {
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			name := fd.FullName()
			if notChanges[name] {
				continue
			}
			if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() && descend[fd.Message().FullName()] {
				walk(root, append(path, fd), fd.Message(), update)
				continue
			}
			want, ok := adjustFields[name]
			if !ok {
				t.Errorf("field %s has no rule in the policy engine: add one (and to adjustFields)", name)
				continue
			}
			seen[name] = true
			if update {
				want = updateOf[want]
			}
			// Build root with only this field set, through path.
			msg := root.ProtoReflect().New()
			m := msg
			for _, p := range path {
				m = m.Mutable(p).Message()
			}
			populateField(m, fd, 0)
			var vs []Violation
			if update {
				u := msg.Interface().(*api.ContainerUpdate)
				vs = nothing.CheckUpdate(testPod, testCtr, u)
				if (*Grant)(nil).CheckUpdate(testPod, testCtr, u) != nil {
					t.Errorf("%s: no policy refuses the update", name)
				}
			} else {
				adj := msg.Interface().(*api.ContainerAdjustment)
				vs = nothing.CheckAdjustment(testPod, testCtr, adj)
				if (*Grant)(nil).CheckAdjustment(testPod, testCtr, adj) != nil {
					t.Errorf("%s: no policy refuses the adjustment", name)
				}
			}
			if len(vs) == 0 || vs[0].Field != want {
				t.Errorf("%s (update %v): a grant of nothing gives violations %v, want one of %s", name, update, vs, want)
			}
		}
	}
	walk(&api.ContainerAdjustment{}, nil, (&api.ContainerAdjustment{}).ProtoReflect().Descriptor(), false)
	walk(&api.ContainerUpdate{}, nil, (&api.ContainerUpdate{}).ProtoReflect().Descriptor(), true)
	for name := range adjustFields {
		if !seen[name] {
			t.Errorf("adjustFields has %s, which the messages no longer have", name)
		}
	}
}

// TestRemovalMarkersAreChanges checks that removing an entry is refused
// like setting it, for every keyed field.
func TestRemovalMarkersAreChanges(t *testing.T) {
	nothing := mustParse(t, "").GrantFor("10", "x")
	for _, tc := range []struct {
		adj  *api.ContainerAdjustment
		want capability.Capability
	}{
		{&api.ContainerAdjustment{Annotations: map[string]string{"-a": ""}}, capability.Annotations},
		{&api.ContainerAdjustment{Mounts: []*api.Mount{{Destination: "-/x"}}}, capability.Mounts},
		{&api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "-A"}}}, capability.Env},
		{linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/x"}}}), capability.Devices},
		{linux(&api.LinuxContainerAdjustment{Namespaces: []*api.LinuxNamespace{{Type: "-network"}}}), capability.Namespaces},
		{linux(&api.LinuxContainerAdjustment{Sysctl: map[string]string{"-a.b": ""}}), capability.Sysctl},
		{linux(&api.LinuxContainerAdjustment{NetDevices: map[string]*api.LinuxNetDevice{"-eth0": {}}}), capability.NetDevices},
		{linux(&api.LinuxContainerAdjustment{Rdt: &api.LinuxRdt{Remove: true}}), capability.Rdt},
		{resources(&api.LinuxResources{Unified: map[string]string{"-memory.max": ""}}), capability.Unified},
	} {
		if vs := nothing.CheckAdjustment(testPod, testCtr, tc.adj); len(vs) != 1 || vs[0].Field != tc.want {
			t.Errorf("%v: violations %v, want one of %s", tc.adj, vs, tc.want)
		}
	}
}
