package stub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/handler"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// syncer records its Synchronize calls.
type syncer struct {
	creator
	mu     sync.Mutex
	calls  [][2]string // pod IDs, container IDs per call
	synced chan struct{}
}

func (s *syncer) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	s.mu.Lock()
	s.calls = append(s.calls, [2]string{sprintIDs(pods), sprintIDs(ctrs)})
	s.mu.Unlock()
	if s.synced != nil {
		s.synced <- struct{}{}
	}
	return []*api.ContainerUpdate{{ContainerId: fmt.Sprintf("%d-pods-%d-ctrs", len(pods), len(ctrs))}}, nil
}

func TestSynchronizeInManyParts(t *testing.T) {
	var (
		pods []*api.PodSandbox
		ctrs []*api.Container
	)
	for i := range 5 {
		pods = append(pods, pod(fmt.Sprintf("p%d", i)))
	}
	for i := range 7 {
		ctrs = append(ctrs, ctr(fmt.Sprintf("c%d", i), "p0"))
	}
	rt := stubtest.NewRuntime(t, stubtest.WithState(pods, ctrs), stubtest.WithSyncChunkSize(3))
	plugin := &syncer{}
	_, p := startStub(t, rt, plugin)

	if got := p.SynchronizeParts(); got != 4 {
		t.Fatalf("runtime sent %d parts, want 4", got)
	}
	rsps := p.SynchronizeResponses()
	for i, r := range rsps[:len(rsps)-1] {
		if !r.GetMore() || len(r.GetUpdate()) != 0 {
			t.Errorf("part %d answered with more=%v and %d updates, want more=true and none", i, r.GetMore(), len(r.GetUpdate()))
		}
	}
	last := rsps[len(rsps)-1]
	if last.GetMore() || len(last.GetUpdate()) != 1 || last.GetUpdate()[0].GetContainerId() != "5-pods-7-ctrs" {
		t.Errorf("last part answered with %v", last)
	}
	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if len(plugin.calls) != 1 {
		t.Fatalf("handler called %d times, want once", len(plugin.calls))
	}
	if got, want := plugin.calls[0], [2]string{sprintIDs(pods), sprintIDs(ctrs)}; got != want {
		t.Errorf("handler got %v, want %v", got, want)
	}
}

func TestHandlerPanicIsRecovered(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	logs, logOpt := recorder()
	var calls atomic.Int32
	plugin := &creator{fn: func(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
		if calls.Add(1) == 1 {
			panic("boom in " + c.GetId())
		}
		return &api.ContainerAdjustment{}, nil, nil
	}}
	_, p := startStub(t, rt, plugin, logOpt)
	ctx := testContext(t)
	_, err := p.CreateContainer(ctx, pod("p"), ctr("c1", "p"))
	if err == nil || !strings.Contains(err.Error(), "boom in c1") {
		t.Fatalf("CreateContainer = %v, want an error with the panic", err)
	}
	if _, err := p.CreateContainer(ctx, pod("p"), ctr("c2", "p")); err != nil {
		t.Errorf("plugin does not keep running after a panic: %v", err)
	}
	recs := logs.find(slog.LevelError, "panicked")
	if len(recs) != 1 || !strings.Contains(recs[0]["stack"], "goroutine") {
		t.Errorf("panic log records = %v", recs)
	}
}

func TestSlowHandlerWarns(t *testing.T) {
	const timeout = 50 * time.Millisecond
	rt := stubtest.NewRuntime(t, stubtest.WithTimeouts(time.Second, timeout))
	logs, logOpt := recorder()
	plugin := &creator{fn: func(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
		<-time.After(3 * timeout) // being slow is what is tested
		return nil, nil, nil
	}}
	s, p := startStub(t, rt, plugin, logOpt)
	if s.RequestTimeout() != timeout {
		t.Fatalf("RequestTimeout() = %v, want %v", s.RequestTimeout(), timeout)
	}
	// The runtime gives up after its timeout; the stub finishes anyway.
	_, _ = p.CreateContainer(testContext(t), pod("p"), ctr("c", "p"))
	recs := logs.waitFor(t, slog.LevelWarn, "longer than the runtime's request timeout")
	if len(recs) != 1 {
		t.Fatalf("got %d slow-handler warnings, want 1", len(recs))
	}
	d, err := time.ParseDuration(recs[0]["duration"])
	if err != nil || d < 3*timeout {
		t.Errorf("warning duration = %q, want at least %v", recs[0]["duration"], 3*timeout)
	}
	if recs[0]["handler"] != "CreateContainer" || recs[0]["timeout"] != timeout.String() {
		t.Errorf("warning = %v", recs[0])
	}
}

func TestConcurrentEvents(t *testing.T) {
	const n = 4
	var (
		inside  atomic.Int32
		allIn   = make(chan struct{})
		closeIt sync.Once
	)
	plugin := &creator{fn: func(ctx context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
		if inside.Add(1) == n {
			closeIt.Do(func() { close(allIn) })
		}
		select {
		case <-allIn:
			return &api.ContainerAdjustment{Annotations: map[string]string{"id": c.GetId()}}, nil, nil
		case <-ctx.Done():
			return nil, nil, errors.New("handlers were not called concurrently")
		}
	}}
	rt := stubtest.NewRuntime(t, stubtest.WithTimeouts(testTimeout, testTimeout))
	_, p := startStub(t, rt, plugin)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("c%d", i)
			rsp, err := p.CreateContainer(testContext(t), pod("p"), ctr(id, "p"))
			if err == nil && rsp.GetAdjust().GetAnnotations()["id"] != id {
				err = fmt.Errorf("answer for %s carries %v", id, rsp.GetAdjust())
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// opter opts out of pods and containers.
type opter struct{}

func (opter) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	if p.GetId() == "boring" {
		return fmt.Errorf("pod %s: %w", p.GetId(), stub.ErrNotInterestedInPod)
	}
	return nil
}

func (opter) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	switch c.GetId() {
	case "skip-ctr":
		return nil, nil, stub.ErrNotInterestedInContainer
	case "skip-pod":
		return nil, nil, stub.ErrNotInterestedInPod
	}
	return &api.ContainerAdjustment{Annotations: map[string]string{"a": "b"}}, nil, nil
}

func (opter) StartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return stub.ErrNotInterestedInContainer
}

func (opter) SynchronizeWithOptOut(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
	return nil, &api.OptOut{PodIds: []string{pods[0].GetId()}}, nil
}

func TestOptOut(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithState([]*api.PodSandbox{pod("old")}, nil))
	_, p := startStub(t, rt, opter{})
	ctx := testContext(t)

	sync := p.SynchronizeResponses()
	if got := sync[len(sync)-1].GetOptOut().GetPodIds(); len(got) != 1 || got[0] != "old" {
		t.Errorf("Synchronize opt-out = %v", got)
	}

	rsp, err := p.RunPodSandbox(ctx, pod("boring"))
	if err != nil {
		t.Fatalf("RunPodSandbox with opt-out = %v, want success", err)
	}
	if got := rsp.GetOptOut().GetPodIds(); len(got) != 1 || got[0] != "boring" {
		t.Errorf("RunPodSandbox opt-out = %v", rsp.GetOptOut())
	}
	if rsp, err := p.RunPodSandbox(ctx, pod("fun")); err != nil || rsp.GetOptOut() != nil {
		t.Errorf("RunPodSandbox without opt-out = %v, %v", rsp, err)
	}

	for _, tc := range []struct {
		id   string
		want *api.OptOut
	}{
		{"skip-ctr", &api.OptOut{ContainerIds: []string{"skip-ctr"}}},
		{"skip-pod", &api.OptOut{PodIds: []string{"pod1"}}},
		{"keep", nil},
	} {
		rsp, err := p.CreateContainer(ctx, pod("pod1"), ctr(tc.id, "pod1"))
		if err != nil {
			t.Fatalf("CreateContainer(%s) = %v", tc.id, err)
		}
		if !proto.Equal(rsp.GetOptOut(), tc.want) {
			t.Errorf("CreateContainer(%s) opt-out = %v, want %v", tc.id, rsp.GetOptOut(), tc.want)
		}
	}
	if err := p.StartContainer(ctx, pod("pod1"), ctr("c", "pod1")); err != nil {
		t.Errorf("StartContainer returning a sentinel = %v, want success", err)
	}
}

// everything handles the events delivered by StateChange and validation.
type everything struct {
	validator
	mu   sync.Mutex
	seen []string
}

func (e *everything) note(s string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, s)
	return nil
}
func (e *everything) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	return e.note("RunPodSandbox:" + p.GetId())
}
func (e *everything) RemoveContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	return e.note("RemoveContainer:" + c.GetId())
}

func TestStateChangeAndValidate(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	plugin := &everything{}
	_, p := startStub(t, rt, plugin)
	ctx := testContext(t)
	c := p.Client()
	if _, err := c.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_RUN_POD_SANDBOX, Pod: pod("p1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_REMOVE_CONTAINER, Pod: pod("p1"), Container: ctr("c1", "p1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StateChange(ctx, &api.StateChangeEvent{Event: api.Event_STOP_POD_SANDBOX, Pod: pod("p1")}); err != nil {
		t.Errorf("StateChange for an unhandled event = %v", err)
	}
	plugin.mu.Lock()
	if got := fmt.Sprint(plugin.seen); got != "[RunPodSandbox:p1 RemoveContainer:c1]" {
		t.Errorf("handlers saw %s", got)
	}
	plugin.mu.Unlock()

	rsp, err := c.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{
		Adjust: &api.ContainerAdjustment{Annotations: map[string]string{"forbidden": "yes"}}})
	if err != nil || !rsp.GetReject() || rsp.GetReason() != "forbidden annotation" {
		t.Errorf("ValidateContainerAdjustment = %v, %v; want a rejection", rsp, err)
	}
	rsp, err = c.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{Adjust: &api.ContainerAdjustment{}})
	if err != nil || rsp.GetReject() {
		t.Errorf("ValidateContainerAdjustment = %v, %v; want acceptance", rsp, err)
	}
}

// evicter evicts from CreateContainer.
type evicter struct{}

func (evicter) CreateContainerWithEvictions(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, nil, []*api.ContainerEviction{{ContainerId: "victim", Reason: "make room for " + c.GetId()}}, nil
}

func TestEvictionsAndUpdateContainers(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	s, p := startStub(t, rt, evicter{})
	ctx := testContext(t)
	rsp, err := p.CreateContainer(ctx, pod("p"), ctr("new", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := rsp.GetEvict(); len(ev) != 1 || ev[0].GetContainerId() != "victim" || ev[0].GetReason() != "make room for new" {
		t.Errorf("evictions = %v", ev)
	}

	update := []*api.ContainerUpdate{{ContainerId: "c1"}}
	evict := []*api.ContainerEviction{{ContainerId: "c2", Reason: "r"}}
	failed, err := s.UpdateContainers(ctx, update, evict)
	if err != nil || len(failed) != 0 {
		t.Fatalf("UpdateContainers = %v, %v", failed, err)
	}
	select {
	case req := <-p.Updates():
		if !proto.Equal(req, &api.UpdateContainersRequest{Update: update, Evict: evict}) {
			t.Errorf("runtime received %v", req)
		}
	case <-ctx.Done():
		t.Fatal("runtime received no UpdateContainers")
	}
}

func TestExtensionsInConfigureResponse(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithTimeouts(time.Second, time.Second), stubtest.WithMaxRequestTimeout(3*time.Second))
	scope := &api.PluginScope{Namespaces: []string{"kube-*"}}
	policy := &api.FailurePolicy{FailRequest: true}
	s, p := startStub(t, rt, &creator{}, stub.WithRequestTimeout(5*time.Second), stub.WithScope(scope), stub.WithFailurePolicy(policy))
	rsp := p.ConfigureResponse()
	if rsp.GetRequestTimeout() != 5000 || !proto.Equal(rsp.GetScope(), scope) || !proto.Equal(rsp.GetFailurePolicy(), policy) {
		t.Errorf("ConfigureResponse = %v", rsp)
	}
	if got := s.RequestTimeout(); got != 3*time.Second {
		t.Errorf("RequestTimeout() = %v, want the runtime's maximum 3s", got)
	}
	if rsp.GetObserveOnly() {
		t.Error("observe_only sent without WithObserveOnly")
	}
	_, p = startStub(t, rt, &creator{}, stub.WithObserveOnly())
	if !p.ConfigureResponse().GetObserveOnly() {
		t.Errorf("WithObserveOnly: ConfigureResponse = %v", p.ConfigureResponse())
	}
	_, p = startStub(t, rt, &creator{}, stub.WithDeclarations(handler.Declarations{ObserveOnly: true}))
	if !p.ConfigureResponse().GetObserveOnly() {
		t.Errorf("Declarations.ObserveOnly: ConfigureResponse = %v", p.ConfigureResponse())
	}
}

func TestBuiltin(t *testing.T) {
	svc, err := stub.NewBuiltin(&podUpdater{}, stub.WithRequiredEvents(api.MaskOf(api.Event_CREATE_CONTAINER)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	cfg, err := svc.Configure(ctx, &api.ConfigureRequest{RuntimeName: "host", SupportedEvents: int32(mustMask(t, "CreateContainer,UpdatePodSandbox"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := api.EventMask(cfg.GetEvents()), mustMask(t, "CreateContainer,UpdatePodSandbox"); got != want {
		t.Errorf("builtin subscribed to %s, want %s", got, want)
	}
	rsp, err := svc.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod("p"), Container: ctr("c", "p")})
	if err != nil || rsp.GetAdjust().GetAnnotations()["seen"] != "c" {
		t.Errorf("builtin CreateContainer = %v, %v", rsp, err)
	}
	more, err := svc.Synchronize(ctx, &api.SynchronizeRequest{More: true})
	if err != nil || !more.GetMore() {
		t.Errorf("builtin Synchronize part = %v, %v", more, err)
	}
	if _, err := svc.Configure(ctx, &api.ConfigureRequest{SupportedEvents: int32(mustMask(t, "StopContainer"))}); err == nil {
		t.Error("builtin accepted a runtime without its required event")
	}
}
