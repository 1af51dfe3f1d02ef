package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names of the checks of plugin errors.
const (
	CheckRunFailure      = "RunPodSandbox error: nothing left, retry works"
	CheckCreateFailure   = "CreateContainer error: nothing left, retry works"
	CheckTeardownErrors  = "Stop/Remove errors: teardown goes on, all told"
	inducedFailureReason = "nri-check: induced failure"
)

var errorChecks = []Check{
	{
		ID: "run-failure", Name: CheckRunFailure, run: runFailure,
		Decides: "when the plugin fails RunPodSandbox, the CRI call fails with the plugin's reason, the pod is not " +
			"listed (containerd#13609), its sandbox process from the event is gone (containerd#13355; needs the " +
			"runtime's PID namespace, else not looked at), and the same pod run again succeeds",
	},
	{
		ID: "create-failure", Name: CheckCreateFailure, run: createFailure,
		Decides: "when the plugin fails CreateContainer, the CRI call fails with the plugin's reason, no container " +
			"is listed, and the same container created again succeeds and reaches the (still connected) plugin",
	},
	{
		ID: "teardown-errors", Name: CheckTeardownErrors, run: teardownErrors,
		Decides: "when a plugin fails StopContainer, RemoveContainer, StopPodSandbox and RemovePodSandbox, the CRI " +
			"calls still succeed, the pod is gone, and a plugin with a later index still gets all four events " +
			"(containerd/nri#286)",
	},
}

// failFirst returns a handler that fails the first event of kind.
func failFirst(kind api.Event) handler {
	var done atomic.Bool
	return func(_ context.Context, ev *event) (*answer, error) {
		if ev.Kind == kind && done.CompareAndSwap(false, true) {
			return nil, errors.New(inducedFailureReason)
		}
		return nil, nil
	}
}

func runFailure(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_RUN_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX}, Handle: failFirst(api.Event_RUN_POD_SANDBOX)})
	if err != nil {
		return fail("%v", err)
	}
	cfg := r.podConfig()
	var f findings
	id, err := r.runPod(r.ctx, cfg)
	if err == nil {
		return fail("RunPodSandbox succeeded (pod %s) although the plugin failed it", short(id))
	}
	carriesInducedReason(&f, err)
	failed, err := r.waitKind(p, api.Event_RUN_POD_SANDBOX, "", "")
	if err != nil {
		return fail("%v", err)
	}
	failedID, pid := failed.Pod.GetId(), int(failed.Pod.GetPid())
	pods, err := r.cri.listPods(r.ctx, map[string]string{runLabel: r.nonce, caseLabel: r.check.ID})
	if err != nil {
		return fail("%v", err)
	}
	for _, pod := range pods {
		f.problem("the failed pod is still listed: %s %s (containerd#13609)", short(pod.GetId()), pod.GetState())
	}
	if _, err := r.cri.podStatus(r.ctx, failedID); err == nil {
		f.problem("PodSandboxStatus still answers for the failed pod %s", short(failedID))
	}
	retryID, err := r.runPod(r.ctx, cfg)
	if err != nil {
		f.problem("the retry failed: %v", err)
		return f.verdict()
	}
	st, err := r.cri.podStatus(r.ctx, retryID)
	if err != nil || st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		f.problem("the retried pod is %s %v, want SANDBOX_READY", st.GetState(), err)
	} else {
		f.saw("the retry is READY")
	}
	retry, err := r.waitKind(p, api.Event_RUN_POD_SANDBOX, retryID, "")
	switch {
	case err != nil:
		f.problem("the plugin did not get the retry's RunPodSandbox: %v", err)
	case pid == 0:
		f.saw("the event names no sandbox process")
	case !processExists(int(retry.Pod.GetPid())):
		f.saw("sandbox process not looked at (the checker does not see the runtime's processes)")
	default:
		if err := waitGone(r.ctx, pid, 5*time.Second); err != nil {
			f.problem("the failed pod's sandbox process %d still runs: %v (containerd#13355)", pid, err)
		} else {
			f.saw("its sandbox process %d is gone", pid)
		}
	}
	if kinds := kindsOf(p.seen(), failedID, ""); slices.Contains(kinds, api.Event_REMOVE_POD_SANDBOX) {
		f.saw("the plugin was told RemovePodSandbox for the failed pod")
	}
	return f.verdict()
}

// processExists reports whether the checker sees process pid.
func processExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// waitGone waits until process pid is gone (or a zombie).
func waitGone(ctx context.Context, pid int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		// The state follows the command's closing parenthesis.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there after %s", d)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func createFailure(r *run) verdict {
	p, err := r.plugin(pluginSpec{Events: []api.Event{api.Event_CREATE_CONTAINER}, Handle: failFirst(api.Event_CREATE_CONTAINER)})
	if err != nil {
		return fail("%v", err)
	}
	podID, pod, err := r.newPod()
	if err != nil {
		return fail("%v", err)
	}
	cfg := r.containerConfig(pod)
	var f findings
	id, err := r.createContainer(r.ctx, podID, pod, cfg)
	if err == nil {
		return fail("CreateContainer succeeded (container %s) although the plugin failed it", short(id))
	}
	carriesInducedReason(&f, err)
	ctrs, err := r.cri.listContainers(r.ctx, podID, nil)
	if err != nil {
		return fail("%v", err)
	}
	for _, c := range ctrs {
		f.problem("a container of the failed creation is listed: %s %s", short(c.GetId()), c.GetState())
		r.adopt("", c.GetId())
	}
	id, err = r.createContainer(r.ctx, podID, pod, cfg)
	if err != nil {
		f.problem("the retry (same name) failed: %v", err)
		return f.verdict()
	}
	f.saw("the retry created %s", short(id))
	if _, err := r.waitKind(p, api.Event_CREATE_CONTAINER, "", id); err != nil {
		f.problem("the failing plugin did not get the retry: %v", err)
	}
	return f.verdict()
}

func teardownErrors(r *run) verdict {
	failing := []api.Event{api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX}
	bad, err := r.plugin(pluginSpec{Idx: "10", Name: "fails", Events: failing, Handle: func(_ context.Context, ev *event) (*answer, error) {
		return nil, errors.New(inducedFailureReason)
	}})
	if err != nil {
		return fail("%v", err)
	}
	later, err := r.plugin(pluginSpec{Idx: "90", Name: "later", Events: failing})
	if err != nil {
		return fail("%v", err)
	}
	podID, _, ctrID, err := r.podWithContainer()
	if err != nil {
		return fail("%v", err)
	}
	var f findings
	for _, step := range []struct {
		name string
		call func(context.Context, string) error
		id   string
	}{
		{"StopContainer", r.stopCounted, ctrID},
		{"RemoveContainer", r.removeContainer, ctrID},
		{"StopPodSandbox", r.stopPod, podID},
		{"RemovePodSandbox", r.removePod, podID},
	} {
		if err := step.call(r.ctx, step.id); err != nil {
			f.problem("%v", err)
		}
	}
	pods, err := r.cri.listPods(r.ctx, map[string]string{runLabel: r.nonce, caseLabel: r.check.ID})
	if err == nil && len(pods) > 0 {
		f.problem("the pod is still listed (%s)", pods[0].GetState())
	}
	ctx, cancel := r.within(eventWait)
	_, _ = later.wait(ctx, func(ev *event) bool { return ev.Kind == api.Event_REMOVE_POD_SANDBOX })
	cancel()
	got := kindsOf(later.seen(), podID, "")
	f.check(slices.Equal(got, failing), "the later plugin got %s, want %s", kindNames(got), kindNames(failing))
	f.saw("failing plugin got %s; later plugin got %s", kindNames(kindsOf(bad.seen(), podID, "")), kindNames(got))
	select {
	case <-bad.closed():
		f.problem("the runtime closed the failing plugin's connection")
	default:
	}
	return f.verdict()
}

// carriesInducedReason records whether the CRI error err of a call the
// plugin failed carries the plugin's reason.
func carriesInducedReason(f *findings, err error) {
	if strings.Contains(err.Error(), inducedFailureReason) {
		f.saw("failed with the plugin's reason")
	} else {
		f.problem("the CRI error does not carry the plugin's reason: %v", err)
	}
}
