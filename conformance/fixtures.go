package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/kubepod"
	"google.golang.org/protobuf/proto"
)

// world is the runtime state the checker presents to a plugin: pods and
// containers that exist at registration (sent in Synchronize), and a new
// pod with a new container that go through their lifecycle as events.
// They are Kubernetes pods of each QoS class, as kubelet and containerd
// describe them (package kubepod): a resource-policy plugin finds the
// cgroup parents, resources and OOM score adjustments it reads on a node.
type world struct {
	pods       []*api.PodSandbox
	containers []*api.Container
	newPod     *api.PodSandbox
	newCtr     *api.Container
	// newInScope is false if the plugin has a scope that the new pod
	// and container could not be brought into (see bringInto): then no
	// lifecycle events are sent, as nrikit's runtime would send none.
	newInScope bool
}

// fixtureNode is the node of the checker's pods: kubelet's systemd cgroup
// driver, this machine's memory (as the plugin sees it).
func fixtureNode() kubepod.Node {
	return kubepod.Node{CgroupDriver: kubepod.Systemd, MemoryCapacity: kubepod.MachineMemory()}
}

// fixtureQOS are the resource requirements of the one container of the
// pods that exist at registration, one pod each (syncParts of them), and
// of the new pod's: modest, so that a resource policy on a small machine
// can place them all.
var fixtureQOS = [syncParts + 1]kubepod.Container{
	// Guaranteed: requests equal limits.
	{Requests: kubepod.Resources{MilliCPU: 500, Memory: 256 << 20}, Limits: kubepod.Resources{MilliCPU: 500, Memory: 256 << 20}},
	// Burstable: requests below limits.
	{Requests: kubepod.Resources{MilliCPU: 250, Memory: 128 << 20}, Limits: kubepod.Resources{MilliCPU: 1000, Memory: 512 << 20}},
	// BestEffort: neither.
	{},
	// Burstable: a memory request only.
	{Requests: kubepod.Resources{Memory: 64 << 20}},
	// The new pod, Burstable.
	{Requests: kubepod.Resources{MilliCPU: 100, Memory: 128 << 20}, Limits: kubepod.Resources{MilliCPU: 500, Memory: 256 << 20}},
}

func newWorld() *world {
	w := &world{newInScope: true}
	node := fixtureNode()
	for i := 0; i < syncParts; i++ {
		kp := kubepod.Pod{UID: fmt.Sprintf("7c0a6b1e-0000-4000-8000-00000000000%d", i), Containers: fixtureQOS[i : i+1]}
		pod := fixturePod(node, fmt.Sprintf("conformance-pod-%d", i), fmt.Sprintf("web-%d", i), kp)
		w.pods = append(w.pods, pod)
		ctr := fixtureContainer(node, fmt.Sprintf("conformance-ctr-%d", i), pod, kp, "app", api.ContainerState_CONTAINER_RUNNING)
		w.containers = append(w.containers, ctr)
	}
	kp := kubepod.Pod{UID: "7c0a6b1e-0000-4000-8000-0000000000ff", Containers: fixtureQOS[syncParts:]}
	w.newPod = fixturePod(node, "conformance-pod-new", "batch-0", kp)
	w.newCtr = fixtureContainer(node, "conformance-ctr-new", w.newPod, kp, "worker", api.ContainerState_CONTAINER_CREATED)
	return w
}

// syncParts is the number of parts of the chunked Synchronize, one per
// pod and container that exist at registration.
const syncParts = 4

// knownContainers are the IDs a plugin may name in updates and evictions.
func (w *world) knownContainers() map[string]bool {
	known := map[string]bool{w.newCtr.GetId(): true}
	for _, c := range w.containers {
		known[c.GetId()] = true
	}
	return known
}

// fixturePod describes pod id, the Kubernetes pod kp on node, as
// containerd does.
func fixturePod(node kubepod.Node, id, name string, kp kubepod.Pod) *api.PodSandbox {
	parent := node.PodCgroupParent(kp)
	return &api.PodSandbox{
		Id:             id,
		Name:           name,
		Uid:            kp.UID,
		Namespace:      "default",
		Labels:         map[string]string{"app": name, "io.kubernetes.pod.namespace": "default"},
		Annotations:    map[string]string{"io.kubernetes.cri.sandbox-id": id},
		RuntimeHandler: "runc",
		Pid:            4242,
		Ips:            []string{"10.88.0.17"},
		Linux: &api.LinuxPodSandbox{
			CgroupParent: parent,
			CgroupsPath:  kubepod.CgroupsPath(parent, id),
			Namespaces: []*api.LinuxNamespace{
				{Type: "network", Path: "/var/run/netns/cni-" + id},
				{Type: "ipc"},
				{Type: "uts"},
			},
			PodResources: kp.PodResources(),
			PodOverhead:  kp.PodOverhead(),
			Resources:    kubepod.SandboxResources(),
		},
	}
}

// fixtureContainer describes container id, the first container of the
// Kubernetes pod kp on node, as containerd does.
func fixtureContainer(node kubepod.Node, id string, pod *api.PodSandbox, kp kubepod.Pod, name string, state api.ContainerState) *api.Container {
	now := time.Now().UnixNano()
	c := &api.Container{
		Id:           id,
		PodSandboxId: pod.GetId(),
		Name:         name,
		State:        state,
		Labels:       map[string]string{"io.kubernetes.container.name": name},
		Annotations:  map[string]string{"io.kubernetes.container.restartCount": "0"},
		Args:         []string{"/bin/server", "--port=8080"},
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + pod.GetName()},
		Mounts: []*api.Mount{
			{Destination: "/etc/hosts", Type: "bind", Source: "/var/lib/pods/" + pod.GetId() + "/etc-hosts", Options: []string{"rbind", "rw"}},
			{Destination: "/dev/shm", Type: "bind", Source: "/run/pods/" + pod.GetId() + "/shm", Options: []string{"rbind", "rw"}},
		},
		Linux: &api.LinuxContainer{
			Namespaces: []*api.LinuxNamespace{
				{Type: "pid"}, {Type: "mount"},
				{Type: "network", Path: "/var/run/netns/cni-" + pod.GetId()},
			},
			Resources:   kp.ContainerResources(0),
			CgroupsPath: kubepod.CgroupsPath(pod.GetLinux().GetCgroupParent(), id),
			OomScoreAdj: &api.OptionalInt{Value: int64(node.OOMScoreAdj(kp, 0))},
		},
		Rlimits:   []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1048576, Soft: 1048576}},
		CreatedAt: now,
		User:      &api.User{Uid: 1000, Gid: 1000},
		Image:     &api.Image{Name: "registry.example.com/app:1.0"},
	}
	if state == api.ContainerState_CONTAINER_RUNNING {
		c.StartedAt = now
		c.Pid = 4343
	}
	return c
}

// updatedResources are the new resources of the container ctr in the
// checker's UpdateContainer: its memory limit doubled (or 512 MiB).
func updatedResources(ctr *api.Container) *api.LinuxResources {
	res := proto.Clone(ctr.GetLinux().GetResources()).(*api.LinuxResources)
	if res.Memory == nil {
		res.Memory = &api.LinuxMemory{}
	}
	res.Memory.Limit = &api.OptionalInt64{Value: max(2*res.GetMemory().GetLimit().GetValue(), 512<<20)}
	return res
}

// lifecycle is the order in which the checker delivers events: the new
// pod and its container from start to removal.
var lifecycle = []api.Event{
	api.Event_RUN_POD_SANDBOX,
	api.Event_CREATE_CONTAINER,
	api.Event_VALIDATE_CONTAINER_ADJUSTMENT,
	api.Event_POST_CREATE_CONTAINER,
	api.Event_START_CONTAINER,
	api.Event_POST_START_CONTAINER,
	api.Event_UPDATE_CONTAINER,
	api.Event_POST_UPDATE_CONTAINER,
	api.Event_UPDATE_POD_SANDBOX,
	api.Event_POST_UPDATE_POD_SANDBOX,
	api.Event_STOP_CONTAINER,
	api.Event_REMOVE_CONTAINER,
	api.Event_STOP_POD_SANDBOX,
	api.Event_REMOVE_POD_SANDBOX,
}

// stateChange is event ev about the world's new pod and container as the
// StateChangeEvent of the StateChange fallback (api.StateChangeEvents):
// the pod, and the container for a container event.
func (w *world) stateChange(ev api.Event) *api.StateChangeEvent {
	sc := &api.StateChangeEvent{Event: ev, Pod: w.newPod}
	if api.ContainerEvents.IsSet(ev) {
		sc.Container = w.newCtr
	}
	return sc
}

// deliver sends event ev about the world's new pod and container with
// its dedicated RPC and returns the plugin's answer.
func (w *world) deliver(ctx context.Context, p api.PluginService, ev api.Event, plugin *api.PluginInstance) (proto.Message, error) {
	pod, ctr := w.newPod, w.newCtr
	switch ev {
	case api.Event_RUN_POD_SANDBOX:
		return p.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
	case api.Event_STOP_POD_SANDBOX:
		return p.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod})
	case api.Event_REMOVE_POD_SANDBOX:
		return p.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod})
	case api.Event_UPDATE_POD_SANDBOX:
		return p.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod,
			OverheadLinuxResources: pod.GetLinux().GetPodOverhead(), LinuxResources: pod.GetLinux().GetPodResources()})
	case api.Event_POST_UPDATE_POD_SANDBOX:
		return p.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
	case api.Event_CREATE_CONTAINER:
		return p.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	case api.Event_POST_CREATE_CONTAINER:
		return p.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
	case api.Event_START_CONTAINER:
		return p.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr})
	case api.Event_POST_START_CONTAINER:
		return p.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
	case api.Event_UPDATE_CONTAINER:
		return p.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: updatedResources(ctr)})
	case api.Event_POST_UPDATE_CONTAINER:
		return p.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	case api.Event_STOP_CONTAINER:
		return p.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
	case api.Event_REMOVE_CONTAINER:
		return p.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
	case api.Event_VALIDATE_CONTAINER_ADJUSTMENT:
		return p.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{
			Pod:       pod,
			Container: ctr,
			Adjust:    &api.ContainerAdjustment{},
			Owners:    &api.OwningPlugins{Owners: map[string]*api.FieldOwners{}},
			Plugins:   []*api.PluginInstance{plugin},
		})
	}
	return nil, fmt.Errorf("event %d cannot be delivered", ev)
}
