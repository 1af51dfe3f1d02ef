package merge_test

import (
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
)

// BenchmarkCreateMerge merges the answers of 16 plugins that each add one
// environment variable.
func BenchmarkCreateMerge(b *testing.B) {
	const plugins = 16
	names := make([]string, plugins)
	for i := range names {
		names[i] = fmt.Sprintf("%02d-plugin", i)
	}
	pod, ctr := testPod(), testContainer()
	b.ReportAllocs()
	for b.Loop() {
		c := merge.NewCreate(pod, ctr)
		for i, name := range names {
			rsp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
				Env: []*api.KeyValue{{Key: fmt.Sprintf("VAR%d", i), Value: "v"}},
			}}
			if err := c.Apply(name, rsp); err != nil {
				b.Fatal(err)
			}
		}
		if len(c.Adjustment().Env) != plugins {
			b.Fatalf("got %d env vars", len(c.Adjustment().Env))
		}
	}
}

// realisticContainer is a container as a runtime sends it to be created:
// twenty environment variables, ten mounts, ten labels and annotations,
// namespaces and Linux resources (like the interop benchmark's workload).
func realisticContainer() *api.Container {
	env := make([]string, 0, 20)
	for k := range 20 {
		env = append(env, fmt.Sprintf("VAR_%02d=value-%02d", k, k))
	}
	mounts := make([]*api.Mount, 0, 10)
	for k := range 10 {
		mounts = append(mounts, &api.Mount{
			Destination: fmt.Sprintf("/data/v%d", k),
			Type:        "bind",
			Source:      fmt.Sprintf("/var/lib/kubelet/vol-%d", k),
			Options:     []string{"rbind", "rw"},
		})
	}
	labels, annotations := map[string]string{}, map[string]string{}
	for k := range 10 {
		labels[fmt.Sprintf("app.kubernetes.io/l%d", k)] = fmt.Sprintf("v%d", k)
		annotations[fmt.Sprintf("example.com/a%d", k)] = fmt.Sprintf("value %d", k)
	}
	return &api.Container{
		Id:           "ctr0",
		PodSandboxId: "pod0",
		Name:         "app",
		State:        api.ContainerState_CONTAINER_CREATED,
		Labels:       labels,
		Annotations:  annotations,
		Args:         []string{"/usr/bin/app", "--config", "/etc/app/config.yaml", "--verbose"},
		Env:          env,
		Mounts:       mounts,
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{{Type: "pid"}, {Type: "mount"}, {Type: "network", Path: "/var/run/netns/cni-0"}},
			Resources: &api.LinuxResources{
				Memory: &api.LinuxMemory{Limit: api.Int64(512 << 20), Reservation: api.Int64(256 << 20), Swap: api.Int64(512 << 20)},
				Cpu: &api.LinuxCPU{Shares: api.UInt64(512), Quota: api.Int64(50000), Period: api.UInt64(100000),
					Cpus: "0-1", Mems: "0"},
				Pids:    &api.LinuxPids{Limit: 4096},
				Unified: map[string]string{"memory.high": "483183820"},
			},
			OomScoreAdj: &api.OptionalInt{Value: 1000},
			CgroupsPath: "/kubepods/burstable/uid0/0",
		},
		Pid: 2000,
	}
}

// BenchmarkCreateMergeOnePlugin is the common case: one plugin adding one
// environment variable to a realistic container (NewCreate, Apply, the
// results read back).
func BenchmarkCreateMergeOnePlugin(b *testing.B) {
	pod, ctr := testPod(), realisticContainer()
	b.ReportAllocs()
	for b.Loop() {
		c := merge.NewCreate(pod, ctr)
		rsp := &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{
			Env: []*api.KeyValue{{Key: "VAR", Value: "v"}},
		}}
		if err := c.Apply("00-plugin", rsp); err != nil {
			b.Fatal(err)
		}
		if len(c.Adjustment().Env) != 1 || len(c.Container().Env) != 21 {
			b.Fatalf("got %d env vars", len(c.Adjustment().Env))
		}
	}
}
