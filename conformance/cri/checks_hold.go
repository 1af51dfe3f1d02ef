package cri

import (
	"time"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names of the checks that hold a hook.
const (
	CheckRunHeldHidden      = "RunPodSandbox held: pod not listed READY"
	CheckRunHeldCreate      = "RunPodSandbox held: no container created"
	CheckCreateHeldHidden   = "CreateContainer held: container not listed"
	CheckStopPodHeldState   = "StopPodSandbox held: containers exited, pod there"
	CheckStopPodHeldNetwork = "StopPodSandbox held: network namespace intact"
)

var holdChecks = []Check{
	{
		ID: "run-held-hidden", Name: CheckRunHeldHidden, Needs: []Need{NeedHold}, Serial: true, run: runHeldHidden,
		Decides: "while the plugin holds RunPodSandbox, ListPodSandbox and PodSandboxStatus do not show the pod " +
			"READY (not listed, not found, or NOTREADY); once released, RunPodSandbox succeeds and the pod is READY",
	},
	{
		ID: "run-held-create", Name: CheckRunHeldCreate, Needs: []Need{NeedHold}, Serial: true, run: runHeldCreate,
		Decides: "while the plugin holds RunPodSandbox, CreateContainer in that pod (its ID from the event) fails, or " +
			"waits and returns only after RunPodSandbox has returned",
	},
	{
		ID: "create-held-hidden", Name: CheckCreateHeldHidden, Needs: []Need{NeedHold}, Serial: true, run: createHeldHidden,
		Decides: "while the plugin holds CreateContainer, ListContainers and ContainerStatus do not show the " +
			"container; once released, CreateContainer succeeds with the ID of the event",
	},
	{
		ID: "stop-held-state", Name: CheckStopPodHeldState, Needs: []Need{NeedHold}, Serial: true, run: stopHeldState,
		Decides: "while the plugin holds StopPodSandbox, the pod's running container is CONTAINER_EXITED and " +
			"PodSandboxStatus still answers (containerd/nri#286: containers stop before the pod)",
	},
	{
		ID: "stop-held-netns", Name: CheckStopPodHeldNetwork, Needs: []Need{NeedHold, NeedPodNetwork, NeedHostPID}, Serial: true, run: stopHeldNetns,
		Decides: "while the plugin holds StopPodSandbox, the pod's network namespace (from RunPodSandbox) is still " +
			"mounted (containerd/nri#286; cri-o#9905)",
	},
}

// heldRun is a RunPodSandbox the check's plugin holds.
type heldRun struct {
	h   *hold
	cfg *runtimeapi.PodSandboxConfig
	ev  *event            // the held event
	ran <-chan callResult // the CRI call's outcome
}

// holdRunPod runs a new pod in the background and waits until the
// check's plugin holds its RunPodSandbox; the caller releases it (h.done).
func (r *run) holdRunPod() (*heldRun, error) {
	h := newHold(api.Event_RUN_POD_SANDBOX, r.holdFor())
	if _, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_RUN_POD_SANDBOX}, Handle: h.handle}); err != nil {
		return nil, err
	}
	cfg := r.podConfig()
	ran := background(func() (string, error) { return r.runPod(r.ctx, cfg) })
	ev, err := h.wait(r)
	if err != nil {
		h.done()
		return nil, err
	}
	r.adopt(ev.Pod.GetId(), "")
	return &heldRun{h: h, cfg: cfg, ev: ev, ran: ran}, nil
}

func runHeldHidden(r *run) verdict {
	held, err := r.holdRunPod()
	if err != nil {
		return fail("%v", err)
	}
	h, cfg, ev, ran := held.h, held.cfg, held.ev, held.ran
	defer h.done()
	podID := ev.Pod.GetId()
	var f findings
	ctx, cancel := h.during(r, ev)
	pods, lerr := r.cri.listPods(ctx, map[string]string{runLabel: r.nonce, caseLabel: r.check.ID})
	st, serr := r.cri.podStatus(ctx, podID)
	looked := time.Now()
	cancel()
	if !h.heldAt(looked) {
		return fail("the runtime did not answer ListPodSandbox and PodSandboxStatus while RunPodSandbox was held (%s)", r.holdFor())
	}
	switch {
	case lerr != nil:
		f.problem("ListPodSandbox while held: %v", lerr)
	default:
		listed := "not listed"
		for _, p := range pods {
			if p.GetId() == podID || p.GetMetadata().GetName() == cfg.GetMetadata().GetName() {
				listed = "listed " + p.GetState().String()
				f.check(p.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY, "ListPodSandbox shows the pod SANDBOX_READY while RunPodSandbox is held")
			}
		}
		f.saw("while held: %s", listed)
	}
	switch {
	case serr != nil:
		f.saw("PodSandboxStatus: %s", rpcMessage(serr))
	default:
		f.check(st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY, "PodSandboxStatus says SANDBOX_READY while RunPodSandbox is held")
		f.saw("PodSandboxStatus: %s", st.GetState())
	}
	h.done()
	res, err := r.await(ran)
	if err != nil {
		return fail("%v", err)
	}
	if res.err != nil {
		f.problem("after the hook returned: %v", res.err)
		return f.verdict()
	}
	f.check(res.id == podID, "RunPodSandbox returned %s, the event was about %s", short(res.id), short(podID))
	if st, err := r.cri.podStatus(r.ctx, res.id); err != nil || st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		f.problem("after RunPodSandbox returned: status %v %v, want SANDBOX_READY", st.GetState(), err)
	} else {
		f.saw("READY once released")
	}
	return f.verdict()
}

func runHeldCreate(r *run) verdict {
	held, err := r.holdRunPod()
	if err != nil {
		return fail("%v", err)
	}
	h, cfg, ev, ran := held.h, held.cfg, held.ev, held.ran
	defer h.done()
	podID := ev.Pod.GetId()
	created := background(func() (string, error) { return r.createContainer(r.ctx, podID, cfg, r.containerConfig(cfg)) })
	var early *callResult
	t := time.NewTimer(time.Until(h.deadline(ev)))
	select {
	case res := <-created:
		early = &res
	case <-t.C:
	}
	t.Stop()
	released := time.Now()
	h.done()
	runRes, err := r.await(ran)
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	if early != nil {
		if early.err == nil {
			f.problem("CreateContainer succeeded (container %s) while RunPodSandbox was held", short(early.id))
		} else {
			f.saw("refused while held: %v", early.err)
		}
		return f.verdict()
	}
	late, err := r.await(created)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case late.err != nil:
		f.saw("CreateContainer waited while held, then failed: %v", late.err)
	case late.at.Before(runRes.at):
		f.problem("CreateContainer returned container %s before RunPodSandbox returned", short(late.id))
	default:
		f.saw("CreateContainer waited until RunPodSandbox returned (%s after the release), then created %s", late.at.Sub(released).Round(time.Millisecond), short(late.id))
	}
	return f.verdict()
}

func createHeldHidden(r *run) verdict {
	h := newHold(api.Event_CREATE_CONTAINER, r.holdFor())
	if _, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}, Handle: h.handle}); err != nil {
		return fail("%v", err)
	}
	defer h.done()
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	created := background(func() (string, error) { return r.createContainer(r.ctx, podID, pod, r.containerConfig(pod)) })
	ev, err := h.wait(r)
	if err != nil {
		return fail("%v", err)
	}
	ctrID := ev.Ctr.GetId()
	var f findings
	ctx, cancel := h.during(r, ev)
	ctrs, lerr := r.cri.listContainers(ctx, podID, nil)
	_, serr := r.cri.inspect(ctx, ctrID)
	looked := time.Now()
	cancel()
	if !h.heldAt(looked) {
		return fail("the runtime did not answer ListContainers and ContainerStatus while CreateContainer was held (%s)", r.holdFor())
	}
	if lerr != nil {
		f.problem("ListContainers while held: %v", lerr)
	}
	for _, c := range ctrs {
		if c.GetId() == ctrID {
			f.problem("ListContainers shows the container (%s) while its CreateContainer is held", c.GetState())
		}
	}
	if serr == nil {
		f.problem("ContainerStatus answers for the container while its CreateContainer is held")
	} else {
		f.saw("while held: not listed, ContainerStatus: %s", rpcMessage(serr))
	}
	h.done()
	res, err := r.await(created)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case res.err != nil:
		f.problem("after the hook returned: %v", res.err)
	case res.id != ctrID:
		f.problem("CreateContainer returned %s, the event was about %s", short(res.id), short(ctrID))
	default:
		f.saw("created once released")
	}
	return f.verdict()
}

// stopHeld runs a pod with a running container, holds its
// StopPodSandbox and calls look meanwhile with the held event and the
// pod's RunPodSandbox.
func stopHeld(r *run, look func(h *hold, ev, run *event, podID, ctrID string, f *findings)) verdict {
	h := newHold(api.Event_STOP_POD_SANDBOX, r.holdFor())
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX}, Handle: h.handle})
	if err != nil {
		return fail("%v", err)
	}
	defer h.done()
	podID, _, ctrID, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	runEv, err := r.waitKind(p, api.Event_RUN_POD_SANDBOX, podID, "")
	if err != nil {
		return fail("%v", err)
	}
	stopped := background(func() (string, error) { return "", r.stopPod(r.ctx, podID) })
	ev, err := h.wait(r)
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	look(h, ev, runEv, podID, ctrID, &f)
	h.done()
	res, err := r.await(stopped)
	if err != nil {
		return fail("%v", err)
	}
	if res.err != nil {
		f.problem("%v", res.err)
	}
	return f.verdict()
}

func stopHeldState(r *run) verdict {
	return stopHeld(r, func(h *hold, ev, _ *event, podID, ctrID string, f *findings) {
		ctx, cancel := h.during(r, ev)
		defer cancel()
		ci, cerr := r.cri.inspect(ctx, ctrID)
		st, serr := r.cri.podStatus(ctx, podID)
		if !h.heldAt(time.Now()) {
			f.problem("the runtime did not answer ContainerStatus and PodSandboxStatus while StopPodSandbox was held (%s)", r.holdFor())
			return
		}
		switch {
		case cerr != nil:
			f.problem("ContainerStatus while held: %v", cerr)
		default:
			state := ci.Status.GetState()
			f.check(state == runtimeapi.ContainerState_CONTAINER_EXITED, "the container is %s while StopPodSandbox is held, want CONTAINER_EXITED", state)
			f.saw("container %s", state)
		}
		if serr != nil {
			f.problem("PodSandboxStatus while held: %s", rpcMessage(serr))
		} else {
			f.saw("pod %s", st.GetState())
		}
	})
}

func stopHeldNetns(r *run) verdict {
	return stopHeld(r, func(h *hold, ev, run *event, _, _ string, f *findings) {
		netns := netnsOf(ev.Pod.GetLinux().GetNamespaces())
		if netns == "" {
			netns = netnsOf(run.Pod.GetLinux().GetNamespaces())
		}
		if netns == "" {
			f.problem("neither RunPodSandbox nor StopPodSandbox names the pod's network namespace")
			return
		}
		err := isNamespace(netns)
		if !h.heldAt(time.Now()) {
			f.problem("looked too late")
			return
		}
		if err != nil {
			f.problem("while StopPodSandbox is held, the pod's network namespace %s is gone: %v", netns, err)
		} else {
			f.saw("while held, %s is a network namespace", netns)
		}
	})
}
