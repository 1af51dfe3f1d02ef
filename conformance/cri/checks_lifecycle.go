package cri

import (
	"slices"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names of the lifecycle checks.
const (
	CheckPodEvents        = "pod events: order and contents"
	CheckContainerEvents  = "container events: order and contents"
	CheckCreateStoppedPod = "CreateContainer refused in a stopped pod"
)

var lifecycleChecks = []Check{
	{
		ID: "pod-events", Name: CheckPodEvents, run: podEvents,
		Decides: "a pod run, stopped and removed through CRI reaches the plugin as RunPodSandbox, StopPodSandbox, " +
			"RemovePodSandbox, once each and in that order, with the pod's ID, name, namespace, UID, labels and " +
			"annotations as given, and its IPs as CRI reports them; pid, cgroups path and network namespace are reported",
	},
	{
		ID: "container-events", Name: CheckContainerEvents, run: containerEvents,
		Decides: "a container created, started, updated (UpdateContainerResources), stopped and removed through CRI " +
			"reaches the plugin as CreateContainer, PostCreateContainer, StartContainer, PostStartContainer, " +
			"UpdateContainer, PostUpdateContainer, StopContainer, RemoveContainer in that order, with its ID, pod, " +
			"name (cri-o#10011), labels, annotations, environment and command as given, the requested resources in " +
			"UpdateContainer and its pid in PostStartContainer",
	},
	{
		ID: "create-stopped", Name: CheckCreateStoppedPod, run: createInStoppedPod,
		Decides: "CreateContainer in a pod after its StopPodSandbox fails, and no CreateContainer reaches the plugin " +
			"(containerd#13599)",
	},
}

func podEvents(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX}})
	if err != nil {
		return fail("%v", err)
	}
	id, cfg, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	st, err := r.cri.podStatus(r.ctx, id)
	if err != nil {
		return fail("PodSandboxStatus: %s", rpcMessage(err))
	}
	if err := r.stopPod(r.ctx, id); err != nil {
		return fail("%v", err)
	}
	if err := r.removePod(r.ctx, id); err != nil {
		return fail("%v", err)
	}
	if _, err := r.waitKind(p, api.Event_REMOVE_POD_SANDBOX, id, ""); err != nil {
		return fail("%v (seen: %s)", err, kindNames(kindsOf(p.seen(), id, "")))
	}
	var f findings
	got := kindsOf(p.seen(), id, "")
	want := []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX}
	f.check(slices.Equal(got, want), "events %s, want %s", kindNames(got), kindNames(want))
	f.saw("%s", kindNames(got))
	run, err := r.waitKind(p, api.Event_RUN_POD_SANDBOX, id, "")
	if err != nil {
		return fail("%v", err)
	}
	checkPod(&f, run.Pod, id, cfg, st)
	if f.problems == nil {
		f.saw("id, name, namespace, uid, labels and annotations as given")
	}
	return f.verdict()
}

// containerEventKinds are the events of a container's whole life, in
// order.
var containerEventKinds = []api.Event{
	api.Event_CREATE_CONTAINER, api.Event_POST_CREATE_CONTAINER, api.Event_START_CONTAINER, api.Event_POST_START_CONTAINER,
	api.Event_UPDATE_CONTAINER, api.Event_POST_UPDATE_CONTAINER, api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER,
}

func containerEvents(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: containerEventKinds})
	if err != nil {
		return fail("%v", err)
	}
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	cfg := r.containerConfig(pod)
	id, err := r.newContainer(podID, pod, cfg)
	if err != nil {
		return fail("%v", err)
	}
	info, err := r.cri.inspect(r.ctx, id)
	if err != nil {
		return fail("%v", err)
	}
	const shares = 512
	if _, err := r.cri.rt.UpdateContainerResources(r.ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: shares},
	}); err != nil {
		return fail("UpdateContainerResources: %s", rpcMessage(err))
	}
	if err := r.stopCounted(r.ctx, id); err != nil {
		return fail("%v", err)
	}
	if err := r.removeContainer(r.ctx, id); err != nil {
		return fail("%v", err)
	}
	if _, err := r.waitKind(p, api.Event_REMOVE_CONTAINER, "", id); err != nil {
		return fail("%v (seen: %s)", err, kindNames(kindsOf(p.seen(), "", id)))
	}
	var f findings
	got := kindsOf(p.seen(), "", id)
	f.check(slices.Equal(got, containerEventKinds), "events %s, want %s", kindNames(got), kindNames(containerEventKinds))
	f.saw("%s", kindNames(got))
	for _, ev := range p.seen() {
		if ev.Ctr.GetId() != id || !slices.Contains([]api.Event{api.Event_CREATE_CONTAINER, api.Event_POST_START_CONTAINER}, ev.Kind) {
			continue
		}
		checkContainer(&f, eventName(ev.Kind), ev.Ctr, id, podID, cfg)
		f.check(ev.Pod.GetId() == podID, "%s: pod %q, want %q", eventName(ev.Kind), ev.Pod.GetId(), podID)
	}
	if ev, err := r.waitKind(p, api.Event_POST_START_CONTAINER, "", id); err == nil {
		switch pid := ev.Ctr.GetPid(); {
		case pid == 0:
			f.saw("PostStartContainer: no pid sent")
		case info.Pid != 0 && int(pid) != info.Pid:
			f.problem("PostStartContainer: pid %d, CRI's status says %d", pid, info.Pid)
		default:
			f.saw("PostStartContainer pid %d", pid)
		}
		f.check(ev.Ctr.GetState() == api.ContainerState_CONTAINER_RUNNING, "PostStartContainer: state %s, want CONTAINER_RUNNING", ev.Ctr.GetState())
	}
	if ev, err := r.waitKind(p, api.Event_CREATE_CONTAINER, "", id); err == nil {
		if img := ev.Ctr.GetImage().GetName(); img != "" {
			f.saw("image %s", img)
		} else {
			f.saw("no image sent")
		}
		if cg := ev.Ctr.GetLinux().GetCgroupsPath(); cg != "" {
			f.saw("cgroups_path %s", cg)
		}
	}
	if ev, err := r.waitKind(p, api.Event_UPDATE_CONTAINER, "", id); err == nil {
		got := ev.Resources.GetCpu().GetShares()
		f.check(got != nil && got.GetValue() == shares, "UpdateContainer: cpu shares %v, CRI asked %d", got, shares)
	}
	if f.problems == nil {
		f.saw("id, pod, name, labels, annotations, env and command as given")
	}
	return f.verdict()
}

func createInStoppedPod(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}})
	if err != nil {
		return fail("%v", err)
	}
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	if err := r.stopPod(r.ctx, podID); err != nil {
		return fail("%v", err)
	}
	cfg := r.containerConfig(pod)
	id, err := r.createContainer(r.ctx, podID, pod, cfg)
	var f findings
	if err == nil {
		f.problem("CreateContainer in the stopped pod succeeded (container %s)", short(id))
	} else {
		f.saw("refused: %v", err)
	}
	if n := len(kindsOf(p.seen(), podID, "")); n > 0 {
		f.problem("the plugin got CreateContainer for a container of the stopped pod")
	}
	return f.verdict()
}
