package cri

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names of the update checks.
const (
	CheckUpdateCRI         = "UpdateContainerResources: plugin's change applied"
	CheckUpdatePodCRI      = "UpdatePodSandboxResources reaches the plugin"
	CheckUpdateFromCreate  = "CreateContainer answer updates another container"
	CheckUpdateFromStop    = "StopContainer answer updates another container"
	CheckUpdateUnsolicited = "unsolicited UpdateContainers applied"
	CheckEvictFromCreate   = "CreateContainer answer evicts a container"
	CheckEvictUnsolicited  = "unsolicited eviction stops the container"
)

// Memory limits the update checks ask for; each differs from the others
// and from the adjustment checks'.
const (
	updCRIMemory    = 300 << 20
	updPluginMemory = 200 << 20
	updOtherMemory  = 160 << 20
)

var updateChecks = []Check{
	{
		ID: "update-cri", Name: CheckUpdateCRI, run: updateFromCRI,
		Decides: fmt.Sprintf("UpdateContainerResources asking memory %d reaches the plugin as UpdateContainer with that "+
			"limit; the plugin answers %d, which the container's spec (and memory cgroup, where cat can read it) then "+
			"shows; PostUpdateContainer follows", updCRIMemory, updPluginMemory),
	},
	{
		ID: "update-pod-cri", Name: CheckUpdatePodCRI, run: updatePodFromCRI,
		Decides: "UpdatePodSandboxResources reaches the plugin as UpdatePodSandbox with the requested resources, then " +
			"PostUpdatePodSandbox (skipped if the runtime does not implement the CRI call)",
	},
	{
		ID: "update-create", Name: CheckUpdateFromCreate, run: updateFromAnswer(api.Event_CREATE_CONTAINER),
		Decides: fmt.Sprintf("the plugin's CreateContainer answer for a second container updates the first one's "+
			"memory limit to %d, which its spec then shows", updOtherMemory),
	},
	{
		ID: "update-stop", Name: CheckUpdateFromStop, run: updateFromAnswer(api.Event_STOP_CONTAINER),
		Decides: fmt.Sprintf("the plugin's StopContainer answer for a second container updates the first one's "+
			"memory limit to %d, which its spec then shows", updOtherMemory),
	},
	{
		ID: "update-unsolicited", Name: CheckUpdateUnsolicited, run: updateUnsolicited,
		Decides: fmt.Sprintf("the plugin's own UpdateContainers call setting a container's memory limit to %d "+
			"returns no failed update, and the container's spec then shows the limit", updOtherMemory),
	},
	{
		ID: "evict-create", Name: CheckEvictFromCreate, run: evictFromCreate,
		Decides: "the plugin's CreateContainer answer for a second container evicts the first, which then exits",
	},
	{
		ID: "evict-unsolicited", Name: CheckEvictUnsolicited, run: evictUnsolicited,
		Decides: "the plugin's own UpdateContainers call evicting a container returns no error, and the container " +
			"then exits",
	},
}

// memoryOf returns the memory limit of a container's spec and, where
// `cat` can read it, of its memory cgroup.
func (r *run) memoryOf(id string) (spec int64, inside string, err error) {
	ci, err := r.cri.inspect(r.ctx, id)
	if err != nil {
		return 0, "", err
	}
	if m := resources(ci.Spec).Memory; ci.Spec != nil && m != nil && m.Limit != nil {
		spec = *m.Limit
	}
	out, _, ierr := r.catFirst(id, []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
	if ierr == nil {
		inside = firstLine(out)
	}
	return spec, inside, nil
}

// wantMemory checks a container's memory limit after an update.
func (r *run) wantMemory(f *findings, what, id string, want int64) {
	// An update may be applied after the call that asked for it returned.
	var spec int64
	var inside string
	deadline := time.Now().Add(eventWait)
	for {
		var err error
		spec, inside, err = r.memoryOf(id)
		if err != nil {
			f.problem("%s: %v", what, err)
			return
		}
		if spec == want || time.Now().After(deadline) || r.ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.check(spec == want, "%s: the spec's memory limit is %d, want %d", what, spec, want)
	if inside != "" {
		f.check(inside == strconv.FormatInt(want, 10), "%s: the memory cgroup says %s, want %d", what, inside, want)
	}
	if spec == want {
		f.saw("%s: memory limit %d in the spec%s", what, want, map[bool]string{true: " and the cgroup", false: ""}[inside != ""])
	}
}

func updateFromCRI(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_UPDATE_CONTAINER, api.Event_POST_UPDATE_CONTAINER},
		Handle: func(_ context.Context, ev *event) (*answer, error) {
			if ev.Kind != api.Event_UPDATE_CONTAINER {
				return nil, nil
			}
			u := &api.ContainerUpdate{ContainerId: ev.Ctr.GetId()}
			u.SetLinuxMemoryLimit(updPluginMemory)
			return &answer{update: []*api.ContainerUpdate{u}}, nil
		}})
	if err != nil {
		return fail("%v", err)
	}
	_, _, id, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	if _, err := r.cri.rt.UpdateContainerResources(r.ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: updCRIMemory},
	}); err != nil {
		return fail("UpdateContainerResources: %s", rpcMessage(err))
	}
	var f findings
	ev, err := r.waitKind(p, api.Event_UPDATE_CONTAINER, "", id)
	if err != nil {
		return fail("%v", err)
	}
	got := ev.Resources.GetMemory().GetLimit()
	f.check(got != nil && got.GetValue() == updCRIMemory, "UpdateContainer carries memory limit %v, CRI asked %d", got, updCRIMemory)
	r.wantMemory(&f, "after the update", id, updPluginMemory)
	if _, err := r.waitKind(p, api.Event_POST_UPDATE_CONTAINER, "", id); err != nil {
		f.problem("%v", err)
	}
	return f.verdict()
}

func updatePodFromCRI(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX}})
	if err != nil {
		return fail("%v", err)
	}
	podID, _, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	_, err = r.cri.rt.UpdatePodSandboxResources(r.ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podID, Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: updCRIMemory, CpuShares: 256},
	})
	if isUnimplemented(err) {
		return skip("the runtime does not implement UpdatePodSandboxResources: %s", rpcMessage(err))
	}
	if err != nil {
		return fail("UpdatePodSandboxResources: %s", rpcMessage(err))
	}
	var f findings
	ev, err := r.waitKind(p, api.Event_UPDATE_POD_SANDBOX, podID, "")
	if err != nil {
		return fail("%v", err)
	}
	got := ev.Resources.GetMemory().GetLimit()
	f.check(got != nil && got.GetValue() == updCRIMemory, "UpdatePodSandbox carries memory limit %v, CRI asked %d", got, updCRIMemory)
	if _, err := r.waitKind(p, api.Event_POST_UPDATE_POD_SANDBOX, podID, ""); err != nil {
		f.problem("%v", err)
	}
	f.saw("%s", kindNames(kindsOf(p.seen(), podID, "")))
	return f.verdict()
}

// target is the container a plugin's answer about another one changes,
// known once the check has made it.
type target struct {
	mu sync.Mutex
	id string
}

func (t *target) set(id string) { t.mu.Lock(); t.id = id; t.mu.Unlock() }
func (t *target) get() string   { t.mu.Lock(); defer t.mu.Unlock(); return t.id }

// otherUpdate returns the update of the target's memory limit, or nil
// while there is no target or ev is about it.
func otherUpdate(t *target, ev *event) []*api.ContainerUpdate {
	id := t.get()
	if id == "" || ev.Ctr.GetId() == id {
		return nil
	}
	u := &api.ContainerUpdate{ContainerId: id}
	u.SetLinuxMemoryLimit(updOtherMemory)
	return []*api.ContainerUpdate{u}
}

// twoContainers runs a pod with a first container, the target, then sets
// it as t and creates and starts a second container.
func (r *run) twoContainers(t *target) (first, second string, err error) {
	podID, pod, err := r.newPod()
	if err != nil {
		return "", "", err
	}
	if first, err = r.newContainer(podID, pod, nil); err != nil {
		return "", "", err
	}
	t.set(first)
	second, err = r.newContainer(podID, pod, nil)
	return first, second, err
}

// updateFromAnswer returns the check of updates in the plugin's answer
// to kind (CreateContainer or StopContainer) about a second container.
func updateFromAnswer(kind api.Event) func(*run) verdict {
	return func(r *run) verdict {
		var t target
		if _, err := r.plugin(pluginSpec{Events: []api.Event{kind}, Handle: func(_ context.Context, ev *event) (*answer, error) {
			return &answer{update: otherUpdate(&t, ev)}, nil
		}}); err != nil {
			return fail("%v", err)
		}
		first, second, err := r.twoContainers(&t)
		if err != nil {
			return fail("%v", err)
		}
		if kind == api.Event_STOP_CONTAINER {
			if err := r.stopContainer(r.ctx, second); err != nil {
				return fail("%v", err)
			}
		}
		var f findings
		r.wantMemory(&f, "the first container", first, updOtherMemory)
		return f.verdict()
	}
}

// unsolicited runs a container, then has the check's plugin call
// UpdateContainers with the request req makes for it.
func (r *run) unsolicited(req func(id string) *api.UpdateContainersRequest) (id string, resp *api.UpdateContainersResponse, err error) {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}})
	if err != nil {
		return "", nil, err
	}
	if _, _, id, err = r.podWithContainer(); err != nil {
		return "", nil, err
	}
	if resp, err = p.rt.UpdateContainers(r.ctx, req(id)); err != nil {
		return "", nil, fmt.Errorf("UpdateContainers: %w", err)
	}
	return id, resp, nil
}

func updateUnsolicited(r *run) verdict {
	id, resp, err := r.unsolicited(func(id string) *api.UpdateContainersRequest {
		u := &api.ContainerUpdate{ContainerId: id}
		u.SetLinuxMemoryLimit(updOtherMemory)
		return &api.UpdateContainersRequest{Update: []*api.ContainerUpdate{u}}
	})
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	f.check(len(resp.GetFailed()) == 0, "UpdateContainers reports %d failed updates", len(resp.GetFailed()))
	r.wantMemory(&f, "the container", id, updOtherMemory)
	return f.verdict()
}

// wantExited waits until a container has exited.
func (r *run) wantExited(f *findings, id string) {
	deadline := time.Now().Add(eventWait)
	for {
		ci, err := r.cri.inspect(r.ctx, id)
		if err != nil {
			f.problem("%v", err)
			return
		}
		if st := ci.Status.GetState(); st == runtimeapi.ContainerState_CONTAINER_EXITED {
			f.saw("the evicted container exited (%s)", ci.Status.GetReason())
			return
		} else if time.Now().After(deadline) || r.ctx.Err() != nil {
			f.problem("the evicted container is still %s after %s", st, eventWait)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func evictFromCreate(r *run) verdict {
	var t target
	if _, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}, Handle: func(_ context.Context, ev *event) (*answer, error) {
		id := t.get()
		if id == "" || ev.Ctr.GetId() == id {
			return nil, nil
		}
		return &answer{evict: []*api.ContainerEviction{{ContainerId: id, Reason: "nri-check: eviction"}}}, nil
	}}); err != nil {
		return fail("%v", err)
	}
	first, _, err := r.twoContainers(&t)
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	r.wantExited(&f, first)
	return f.verdict()
}

func evictUnsolicited(r *run) verdict {
	id, _, err := r.unsolicited(func(id string) *api.UpdateContainersRequest {
		return &api.UpdateContainersRequest{Evict: []*api.ContainerEviction{{ContainerId: id, Reason: "nri-check: eviction"}}}
	})
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	r.wantExited(&f, id)
	return f.verdict()
}
