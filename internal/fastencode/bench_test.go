package fastencode

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
)

// benchPod is a pod with 10 labels, 10 annotations and a Linux cgroup
// parent (as in internal/fastdecode).
func benchPod(i int) *api.PodSandbox {
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

// benchContainer is a container with 5 labels, 10 annotations, 20 env
// vars, 10 mounts with 3 options each, args and Linux resources
// (memory, cpu, pids), as in internal/fastdecode.
func benchContainer(i int, podID string) *api.Container {
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

func TestBenchMessages(t *testing.T) {
	p := benchPod(0)
	for _, m := range []proto.Message{p, benchContainer(0, p.Id)} {
		if d := diffEncode(fast, m, false); d != "" {
			t.Errorf("%T: %s", m, d)
		}
	}
}

// benchProto is what callers do today: a size pass, then MarshalAppend
// with the cached sizes, into a reused buffer.
func benchProto(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(proto.Size(m)))
	for b.Loop() {
		n := proto.Size(m)
		var err error
		buf, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf[:0], m)
		if err != nil || len(buf) != n {
			b.Fatal(err, len(buf), n)
		}
	}
}

func benchFast(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(proto.Size(m)))
	for b.Loop() {
		n := fast.size(m)
		var err error
		buf, err = fast.append(buf[:0], m)
		if err != nil || len(buf) != n {
			b.Fatal(err, len(buf), n)
		}
	}
}

// benchProtoAppend and benchFastAppend: the append pass alone (no size pass).
func benchProtoAppend(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFastAppend(b *testing.B, m proto.Message) {
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = fast.append(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPod(b *testing.B) {
	p := benchPod(0)
	b.Run("proto/size+append", func(b *testing.B) { benchProto(b, p) })
	b.Run("fastencode/size+append", func(b *testing.B) { benchFast(b, p) })
	b.Run("proto/append", func(b *testing.B) { benchProtoAppend(b, p) })
	b.Run("fastencode/append", func(b *testing.B) { benchFastAppend(b, p) })
}

func BenchmarkContainer(b *testing.B) {
	c := benchContainer(0, benchPod(0).Id)
	b.Run("proto/size+append", func(b *testing.B) { benchProto(b, c) })
	b.Run("fastencode/size+append", func(b *testing.B) { benchFast(b, c) })
	b.Run("proto/append", func(b *testing.B) { benchProtoAppend(b, c) })
	b.Run("fastencode/append", func(b *testing.B) { benchFastAppend(b, c) })
}
