// Package workload builds the pods and containers the benchmarks send: a
// realistic CreateContainerRequest (a pod with ten labels and annotations,
// a container with twenty environment variables, ten mounts and its
// resources filled in) and listings of existing containers for
// Synchronize. It uses nrikit's api package; the upstream side of the
// harness decodes the same bytes into upstream's types, so both
// implementations carry identical payloads.
package workload

import (
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// Namespace is the namespace of every benchmark pod. Scoped plugins that
// should see the benchmark's containers select it.
const Namespace = "bench"

// Pod returns pod number i.
func Pod(i int) *api.PodSandbox {
	labels := map[string]string{}
	annotations := map[string]string{}
	for k := range 10 {
		labels[fmt.Sprintf("app.kubernetes.io/l%d", k)] = fmt.Sprintf("v%d-%d", i, k)
		annotations[fmt.Sprintf("example.com/a%d", k)] = fmt.Sprintf("value %d/%d", i, k)
	}
	return &api.PodSandbox{
		Id:             fmt.Sprintf("%064x", 0x5000000+i),
		Name:           fmt.Sprintf("web-%d", i),
		Uid:            fmt.Sprintf("8b1a9953-c461-4296-8f1e-%012d", i),
		Namespace:      Namespace,
		Labels:         labels,
		Annotations:    annotations,
		RuntimeHandler: "runc",
		Linux: &api.LinuxPodSandbox{
			CgroupParent: "/kubepods/burstable/pod" + fmt.Sprint(i),
			CgroupsPath:  fmt.Sprintf("/kubepods/burstable/pod%d/sandbox", i),
			Namespaces: []*api.LinuxNamespace{
				{Type: "network", Path: fmt.Sprintf("/var/run/netns/cni-%d", i)},
				{Type: "ipc"}, {Type: "uts"},
			},
			PodResources: resources(),
		},
		Pid: uint32(1000 + i),
		Ips: []string{fmt.Sprintf("10.0.%d.%d", (i/250)%250, i%250+1)},
	}
}

// Container returns container number i of pod.
func Container(i int, pod *api.PodSandbox) *api.Container {
	env := make([]string, 0, 20)
	for k := range 20 {
		env = append(env, fmt.Sprintf("VAR_%02d=value-%02d", k, k))
	}
	mounts := make([]*api.Mount, 0, 10)
	for k := range 10 {
		mounts = append(mounts, &api.Mount{
			Destination: fmt.Sprintf("/data/v%d", k),
			Type:        "bind",
			Source:      fmt.Sprintf("/var/lib/kubelet/vol-%d-%d", i, k),
			Options:     []string{"rbind", "rw"},
		})
	}
	return &api.Container{
		Id:           fmt.Sprintf("%064x", 0xc000000+i),
		PodSandboxId: pod.GetId(),
		Name:         fmt.Sprintf("app-%d", i),
		State:        api.ContainerState_CONTAINER_CREATED,
		Labels: map[string]string{
			"io.kubernetes.container.name": "app",
			"io.kubernetes.pod.namespace":  Namespace,
		},
		Annotations: map[string]string{
			"io.kubernetes.container.hash":         "8a3c1f2e",
			"io.kubernetes.container.restartCount": "0",
		},
		Args:   []string{"/usr/bin/app", "--config", "/etc/app/config.yaml", "--verbose"},
		Env:    env,
		Mounts: mounts,
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{
				{Type: "pid"}, {Type: "mount"},
				{Type: "network", Path: fmt.Sprintf("/var/run/netns/cni-%d", i)},
			},
			Resources:   resources(),
			OomScoreAdj: &api.OptionalInt{Value: 1000},
			CgroupsPath: fmt.Sprintf("/kubepods/burstable/%s/%d", pod.GetUid(), i),
		},
		Pid: uint32(2000 + i),
	}
}

func resources() *api.LinuxResources {
	return &api.LinuxResources{
		Memory: &api.LinuxMemory{
			Limit:       &api.OptionalInt64{Value: 512 << 20},
			Reservation: &api.OptionalInt64{Value: 256 << 20},
			Swap:        &api.OptionalInt64{Value: 512 << 20},
		},
		Cpu: &api.LinuxCPU{
			Shares: &api.OptionalUInt64{Value: 512},
			Quota:  &api.OptionalInt64{Value: 50000},
			Period: &api.OptionalUInt64{Value: 100000},
			Cpus:   "0-1",
			Mems:   "0",
		},
		Pids:    &api.LinuxPids{Limit: 4096},
		Unified: map[string]string{"memory.high": "483183820"},
	}
}

// CreateRequest returns the CreateContainerRequest of the benchmarks for
// container i (in pod i).
func CreateRequest(i int) *api.CreateContainerRequest {
	pod := Pod(i)
	return &api.CreateContainerRequest{Pod: pod, Container: Container(i, pod)}
}

// PostStartRequest returns the PostStartContainerRequest for container i.
func PostStartRequest(i int) *api.PostStartContainerRequest {
	pod := Pod(i)
	ctr := Container(i, pod)
	ctr.State = api.ContainerState_CONTAINER_RUNNING
	return &api.PostStartContainerRequest{Pod: pod, Container: ctr}
}

// Existing returns n running containers spread over n/10 pods (at least
// one), as a runtime lists them for Synchronize.
func Existing(n int) ([]*api.PodSandbox, []*api.Container) {
	pods := make([]*api.PodSandbox, max(n/10, 1))
	for i := range pods {
		pods[i] = Pod(i)
	}
	ctrs := make([]*api.Container, n)
	for i := range ctrs {
		ctrs[i] = Container(i, pods[i%len(pods)])
		ctrs[i].State = api.ContainerState_CONTAINER_RUNNING
	}
	return pods, ctrs
}
