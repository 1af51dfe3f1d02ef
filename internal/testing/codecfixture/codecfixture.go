// Package codecfixture holds what the tests and benchmarks of nrikit's
// hand-written protobuf codecs (internal/fastdecode, internal/fastencode)
// share: realistic pods and containers, and a check that a populated
// message has every field set. It is imported by tests only.
package codecfixture

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
)

// Pod is a pod with 10 labels and 10 annotations.
func Pod(i int) *api.PodSandbox {
	p := &api.PodSandbox{
		Id:   fmt.Sprintf("6f1c0a3e9b2d4c5e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c%04d", i),
		Name: fmt.Sprintf("web-frontend-7d9f8c6b5-x%04d", i), Uid: fmt.Sprintf("1b2c3d4e-5f60-7182-93a4-b5c6d7e8%04d", i),
		Namespace: "production", RuntimeHandler: "runc", Pid: 4242, Ips: []string{"10.244.1.17", "fd00:10:244:1::17"},
		Labels: map[string]string{}, Annotations: map[string]string{},
		Linux: &api.LinuxPodSandbox{CgroupParent: "/kubepods/burstable/pod1b2c3d4e", CgroupsPath: "kubepods-burstable.slice"},
	}
	for j := 0; j < 10; j++ {
		p.Labels[fmt.Sprintf("app/label-%d", j)] = fmt.Sprintf("value-%d", j)
		p.Annotations[fmt.Sprintf("example.com/note-%d", j)] = fmt.Sprintf("value-%d", j)
	}
	return p
}

// Container is a container with 5 labels, 10 annotations, 20 env
// vars, 10 mounts with 3 options each, args and Linux resources.
func Container(i int, podID string) *api.Container {
	c := &api.Container{
		Id: fmt.Sprintf("c0ffee%058d", i), PodSandboxId: podID, Name: fmt.Sprintf("app-%d", i),
		State: api.ContainerState_CONTAINER_RUNNING, Args: []string{"/usr/local/bin/server", "--port=8080", "--verbose"},
		Labels: map[string]string{}, Annotations: map[string]string{}, Pid: 31337,
		CreatedAt: 1700000000000000000, StartedAt: 1700000001000000000,
		Linux: &api.LinuxContainer{
			CgroupsPath: "kubepods-burstable-pod1b2c3d4e.slice:cri-containerd:c0ffee",
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 512 << 20}, Swap: &api.OptionalInt64{Value: 512 << 20}},
				Cpu: &api.LinuxCPU{Shares: &api.OptionalUInt64{Value: 512}, Quota: &api.OptionalInt64{Value: 50000},
					Period: &api.OptionalUInt64{Value: 100000}, Cpus: "0-3", Mems: "0"},
				Pids: &api.LinuxPids{Limit: 1024},
			},
		},
	}
	for j := 0; j < 5; j++ {
		c.Labels[fmt.Sprintf("io.k8s/label-%d", j)] = fmt.Sprintf("v%d", j)
	}
	for j := 0; j < 10; j++ {
		c.Annotations[fmt.Sprintf("io.k8s/annotation-%d", j)] = fmt.Sprintf("v%d", j)
	}
	for j := 0; j < 20; j++ {
		c.Env = append(c.Env, fmt.Sprintf("ENV_VAR_%d=value-%d", j, j))
	}
	for j := 0; j < 10; j++ {
		c.Mounts = append(c.Mounts, &api.Mount{Destination: fmt.Sprintf("/data/vol-%d", j), Type: "bind",
			Source:  fmt.Sprintf("/var/lib/kubelet/pods/1b2c/vol-%d", j),
			Options: []string{"rbind", "rprivate", "rw"}})
	}
	return c
}

// Unset reports the first field of m (recursively) that is not set, and
// with withUnknown the first message without unknown fields; "" if none:
// for tests that must cover every field of a schema that may grow.
func Unset(m protoreflect.Message, withUnknown bool) string {
	if withUnknown && len(m.GetUnknown()) == 0 {
		return string(m.Descriptor().FullName()) + " (unknown fields)"
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			return string(fd.FullName())
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				var bad string
				m.Get(fd).Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
					bad = Unset(v.Message(), withUnknown)
					return bad == ""
				})
				if bad != "" {
					return bad
				}
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := m.Get(fd).List()
				for j := 0; j < l.Len(); j++ {
					if bad := Unset(l.Get(j).Message(), withUnknown); bad != "" {
						return bad
					}
				}
			}
		case fd.Message() != nil:
			if bad := Unset(m.Get(fd).Message(), withUnknown); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// Populate sets every field of m (recursively; maps and lists get n
// entries) to a non-zero value derived from seed, and with withUnknown gives
// every message an unknown field.
func Populate(m protoreflect.Message, seed, n int, withUnknown bool) {
	populate(m, seed, n, 0, withUnknown)
}

func populate(m protoreflect.Message, seed, n, depth int, withUnknown bool) {
	if depth > 12 {
		panic("populate: schema nests deeper than expected")
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		s := seed*31 + i
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := 0; j < n; j++ {
				k := Scalar(fd.MapKey(), s+j)
				var v protoreflect.Value
				if fd.MapValue().Message() != nil {
					v = mp.NewValue()
					populate(v.Message(), s+j, n, depth+1, withUnknown)
				} else {
					v = Scalar(fd.MapValue(), s+j)
				}
				mp.Set(k.MapKey(), v)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				if fd.Message() != nil {
					e := l.NewElement()
					populate(e.Message(), s+j, n, depth+1, withUnknown)
					l.Append(e)
				} else {
					l.Append(Scalar(fd, s+j))
				}
			}
		case fd.Message() != nil:
			populate(m.Mutable(fd).Message(), s, n, depth+1, withUnknown)
		default:
			m.Set(fd, Scalar(fd, s))
		}
	}
	if !withUnknown {
		return
	}
	// An unknown varint field and an unknown bytes field.
	u := protowire.AppendVarint(protowire.AppendTag(nil, 1500, protowire.VarintType), uint64(seed)+1)
	u = protowire.AppendBytes(protowire.AppendTag(u, 1501, protowire.BytesType), []byte{byte(seed), 1, 2})
	m.SetUnknown(u)
}

// Scalar returns a non-zero value of fd's (scalar) kind.
func Scalar(fd protoreflect.FieldDescriptor, s int) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d-é", fd.Name(), s))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{byte(s), 0xff, 0})
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(1 + s%(vals.Len()-1)).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(-int32(s) - 1000)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(-int64(s) - 1<<40)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(s) + 1<<31)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(s) + 1<<63)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(s) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(s) + 0.25)
	}
	panic(fmt.Sprintf("scalar: unhandled kind %v of %s", fd.Kind(), fd.FullName()))
}
