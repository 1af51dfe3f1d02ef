package adaptation

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

// Opt-out answers (docs/scope.md): no further events about the object,
// until it is removed.

func TestOptOutPod(t *testing.T) {
	reg := newCountingRecorder()
	rt := newTestRuntime(t, []testPlugin{
		{"10-opt", helperArgs("stub", "-opt-out-pods")},
		{"20-all", helperArgs("stub")},
	}, WithMetricsRecorder(reg))
	rt.start(t)
	called, _ := lifecycle(t, rt, testPod(0), testCtr(0, 0))
	// The plugin reports RunPodSandbox before opting out: pod1's is the
	// barrier after which everything it was sent about pod0 is in.
	must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: testPod(1)}))
	rt.logs.wait(t, "barrier", output("10-opt", "EVENT RunPodSandbox pod1"))
	if got := append(eventsOf(rt, "10-opt", "pod0"), eventsOf(rt, "10-opt", "ctr0")...); !slices.Equal(got, []string{"RunPodSandbox"}) {
		t.Errorf("plugin that opted out of pod0 saw %q", got)
	}
	rt.logs.wait(t, "barrier", output("20-all", "EVENT RunPodSandbox pod1"))
	if got := eventsOf(rt, "20-all", "pod0"); len(got) != len(called) {
		t.Errorf("other plugin saw %q, want all of %q", got, called)
	}
	if info, _ := rt.plugin("10-opt"); info.OptedOut != uint64(len(called)-1) || info.Filtered != 0 {
		t.Errorf("opted-out=%d filtered=%d, want %d, 0", info.OptedOut, info.Filtered, len(called)-1)
	}
	if pods, ctrs := rt.tracked(t, "10-opt"); pods != 1 || ctrs != 0 {
		t.Errorf("%d pod and %d container records, want pod1's opt-out only", pods, ctrs)
	}
	values := reg.values()
	for _, e := range called[1:] {
		if got := values[MetricOptedOut+"/10-opt/"+e]; got != 1 {
			t.Errorf("%s for %s = %v, want 1", MetricOptedOut, e, got)
		}
	}
	if got := values[MetricOptedOut+"/20-all/RemovePodSandbox"]; got != 0 {
		t.Errorf("%s counted for a plugin that did not opt out", MetricOptedOut)
	}
}

func TestOptOutContainer(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-opt", helperArgs("stub", "-opt-out-containers", "-env", "OPT=1")},
		{"20-env", helperArgs("stub", "-env", "B=1")},
	})
	rt.start(t)
	called, rsp := lifecycle(t, rt, testPod(0), testCtr(0, 0))
	// An opt-out answer carries no changes.
	if got := envOf(rsp.Adjust); !slices.Equal(got, []string{"B=1"}) {
		t.Errorf("container adjusted with %q, want B=1 only", got)
	}
	rt.logs.wait(t, "warning", func(r logRecord) bool {
		return r.msg == "plugin opted out and asked for changes; an opt-out answer carries no changes, ignoring them" &&
			r.attrs["plugin"] == "10-opt"
	})
	if got := rt.logs.wait(t, "next plugin's request", output("20-env", "EVENT CreateContainer")).msg; got != "EVENT CreateContainer pod0 ctr0 env=BASE=1" {
		t.Errorf("next plugin got %q, without the opted-out plugin's change", got)
	}
	rt.logs.wait(t, "pod removed", output("10-opt", "EVENT RemovePodSandbox pod0"))
	if got := eventsOf(rt, "10-opt", "ctr0"); !slices.Equal(got, []string{"CreateContainer"}) {
		t.Errorf("plugin that opted out of ctr0 saw %q", got)
	}
	var podEvents, ctrEvents int
	for _, e := range called {
		ev, err := api.ParseEvent(e)
		must(t, err)
		if isContainerEvent(ev) {
			ctrEvents++
		} else {
			podEvents++
		}
	}
	if got := eventsOf(rt, "10-opt", "pod0"); len(got) != podEvents+1 {
		t.Errorf("plugin saw %q about pod0, want its %d pod events and CreateContainer", got, podEvents)
	}
	if info, _ := rt.plugin("10-opt"); info.OptedOut != uint64(ctrEvents-1) {
		t.Errorf("opted-out=%d, want %d", info.OptedOut, ctrEvents-1)
	}
	if pods, ctrs := rt.tracked(t, "10-opt"); pods != 0 || ctrs != 0 {
		t.Errorf("%d pod and %d container records after removal", pods, ctrs)
	}
}

func TestOptOutSynchronize(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-opt", helperArgs("stub", "-sync-opt-out", "pod0,ctr1,ctr9,pod9")}})
	for i := range 2 {
		rt.store.AddPod(testPod(i))
		rt.store.AddCtr(testCtr(i, i))
	}
	rt.store.AddCtr(testCtr(1, 2))
	rt.start(t)
	rt.logs.wait(t, "unknown IDs ignored", func(r logRecord) bool {
		return r.msg == "plugin opted out of objects it was not sent in Synchronize, ignoring them" &&
			r.attrs["ignored"] == "pod pod9,container ctr9"
	})
	ctx := ctxT(t)
	for _, c := range []struct{ pod, ctr int }{{0, 0}, {1, 1}, {1, 2}} {
		pod, ctr := testPod(c.pod), testCtr(c.pod, c.ctr)
		must(t, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
		must(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
	}
	for i := range 2 {
		must(t, rt.a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: testPod(i)}))
		must(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: testPod(i)}))
	}
	rt.logs.wait(t, "last event", output("10-opt", "EVENT RemovePodSandbox pod1"))
	for id, want := range map[string][]string{
		"pod0": nil, "ctr0": nil, "ctr1": nil,
		"ctr2": {"StartContainer", "RemoveContainer"},
	} {
		if got := eventsOf(rt, "10-opt", id); !slices.Equal(got, want) {
			t.Errorf("plugin saw %q about %s, want %q", got, id, want)
		}
	}
	if pods, ctrs := rt.tracked(t, "10-opt"); pods != 0 || ctrs != 0 {
		t.Errorf("%d pod and %d container records after removal", pods, ctrs)
	}
}

// optingOut is a builtin plugin that opts out of pods labelled opt=pod
// and of every container.
type optingOut struct{}

func (optingOut) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	if pod.GetLabels()["opt"] == "pod" {
		return stub.ErrNotInterestedInPod
	}
	return nil
}

func (optingOut) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, stub.ErrNotInterestedInContainer
}

// TestOptOutStateReleased creates and removes 100,000 pods with a
// container each, and checks that the per-plugin scope and opt-out
// records go back to zero, for a plugin with a scope and one without,
// neither subscribed to the removals.
func TestOptOutStateReleased(t *testing.T) {
	const pods = 100_000
	mask := api.MaskOf(api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER)
	plain, err := stub.NewBuiltin(optingOut{}, stub.WithSubscription(mask))
	must(t, err)
	scoped, err := stub.NewBuiltin(optingOut{}, stub.WithSubscription(mask), stub.WithScope(gpuScope))
	must(t, err)
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("10", "plain", plain), WithBuiltinPlugin("20", "scoped", scoped))
	rt.start(t)
	ctx := ctxT(t)

	pod := func(i int) *api.PodSandbox {
		p := testPod(i)
		p.Labels = map[string]string{"accel": "cpu"}
		if i%2 == 0 {
			p.Labels["accel"] = "gpu"
		}
		if i%4 < 2 {
			p.Labels["opt"] = "pod"
		}
		return p
	}
	create := func(i int) error {
		if err := rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod(i)}); err != nil {
			return err
		}
		_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod(i), Container: testCtr(i, i)})
		return err
	}
	removeCtr := func(i int) error {
		return rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod(i), Container: testCtr(i, i)})
	}
	removePod := func(i int) error {
		return rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod(i)})
	}

	// The records exist while the objects do, and go with them.
	for i := range 8 {
		must(t, create(i))
	}
	for _, p := range []string{"10-plain", "20-scoped"} {
		if pods, ctrs := rt.tracked(t, p); pods == 0 || ctrs == 0 {
			t.Fatalf("%s: %d pod and %d container records for live objects", p, pods, ctrs)
		}
	}
	for i := range 8 {
		must(t, removeCtr(i))
	}
	for _, p := range []string{"10-plain", "20-scoped"} {
		if pods, ctrs := rt.tracked(t, p); pods == 0 || ctrs != 0 {
			t.Fatalf("%s: %d pod and %d container records after removing the containers", p, pods, ctrs)
		}
	}
	for i := range 8 {
		must(t, removePod(i))
	}

	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pods; i += workers {
				if err := create(i); err != nil {
					errs <- fmt.Errorf("pod %d: %w", i, err)
					return
				}
				if err := removeCtr(i); err != nil {
					errs <- fmt.Errorf("pod %d: %w", i, err)
					return
				}
				if err := removePod(i); err != nil {
					errs <- fmt.Errorf("pod %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, p := range []string{"10-plain", "20-scoped"} {
		if pods, ctrs := rt.tracked(t, p); pods != 0 || ctrs != 0 {
			t.Errorf("%s: %d pod and %d container records left after removing everything", p, pods, ctrs)
		}
	}

	// Pods 0-7 were created twice: in the first round and in the loop.
	var wantPlain, wantScopedOpted, wantScopedFiltered uint64
	for i := range pods {
		n := uint64(1)
		if i < 8 {
			n = 2
		}
		p := pod(i)
		if p.Labels["opt"] == "pod" {
			wantPlain += n // its CreateContainer
		}
		switch {
		case p.Labels["accel"] != "gpu":
			wantScopedFiltered += 2 * n // RunPodSandbox and CreateContainer
		case p.Labels["opt"] == "pod":
			wantScopedOpted += n
		}
	}
	if info, _ := rt.plugin("10-plain"); info.OptedOut != wantPlain || info.Filtered != 0 {
		t.Errorf("10-plain: opted-out=%d filtered=%d, want %d, 0", info.OptedOut, info.Filtered, wantPlain)
	}
	if info, _ := rt.plugin("20-scoped"); info.OptedOut != wantScopedOpted || info.Filtered != wantScopedFiltered {
		t.Errorf("20-scoped: opted-out=%d filtered=%d, want %d, %d", info.OptedOut, info.Filtered, wantScopedOpted, wantScopedFiltered)
	}
}
