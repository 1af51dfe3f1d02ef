package stub_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// seer records which of its handlers were called, about which object.
type seer struct {
	mu   sync.Mutex
	seen []string // "Event id"
}

func (s *seer) saw(e, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, e+" "+id)
}

// take returns what the plugin saw since the last call.
func (s *seer) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.seen
	s.seen = nil
	return out
}

func (s *seer) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	s.saw("Synchronize", sprintIDs(pods)+sprintIDs(ctrs))
	return nil, nil
}

func (s *seer) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	s.saw("RunPodSandbox", p.GetId())
	return nil
}

func (s *seer) StopPodSandbox(_ context.Context, p *api.PodSandbox) error {
	s.saw("StopPodSandbox", p.GetId())
	return nil
}

func (s *seer) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	s.saw("CreateContainer", c.GetId())
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("SEEN", "1")
	return adj, nil, nil
}

func (s *seer) StartContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	s.saw("StartContainer", c.GetId())
	return nil
}

func (s *seer) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	s.saw("StopContainer", c.GetId())
	return nil, nil
}

func (s *seer) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	s.saw("ValidateContainerAdjustment", req.GetContainer().GetId())
	return nil
}

// starter handles StartContainer only.
type starter struct{ s seer }

func (s *starter) StartContainer(ctx context.Context, p *api.PodSandbox, c *api.Container) error {
	return s.s.StartContainer(ctx, p, c)
}

// scopeFixture: gpu is a pod in the scope accel=gpu with the containers
// main (in the scope's container names) and side (not); cpu is a pod out
// of scope with a container main.
type scopeFixture struct {
	gpu, cpu             *api.PodSandbox
	gpuMain, side, cpuMn *api.Container
}

func newScopeFixture() scopeFixture {
	f := scopeFixture{gpu: pod("gpu"), cpu: pod("cpu")}
	f.gpu.Labels = map[string]string{"accel": "gpu"}
	f.gpuMain, f.side, f.cpuMn = ctr("gpu-main", "gpu"), ctr("gpu-side", "gpu"), ctr("cpu-main", "cpu")
	f.gpuMain.Name, f.side.Name, f.cpuMn.Name = "main", "side", "main"
	return f
}

var gpuMainScope = &api.PluginScope{PodLabelSelector: "accel=gpu", ContainerNames: []string{"main"}}

// sendAll sends every event of the fixture the seer handles and returns
// the CreateContainer answers by container ID.
func (f scopeFixture) sendAll(t *testing.T, p *stubtest.Plugin) map[string]*api.CreateContainerResponse {
	t.Helper()
	ctx := testContext(t)
	c := p.Client()
	created := map[string]*api.CreateContainerResponse{}
	for _, pd := range []*api.PodSandbox{f.gpu, f.cpu} {
		if _, err := c.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pd}); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []struct {
		pod *api.PodSandbox
		ctr *api.Container
	}{{f.gpu, f.gpuMain}, {f.gpu, f.side}, {f.cpu, f.cpuMn}} {
		rsp, err := c.CreateContainer(ctx, &api.CreateContainerRequest{Pod: x.pod, Container: x.ctr})
		if err != nil {
			t.Fatal(err)
		}
		created[x.ctr.GetId()] = rsp
		if _, err := c.ValidateContainerAdjustment(ctx, &api.ValidateContainerAdjustmentRequest{Pod: x.pod, Container: x.ctr}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.StartContainer(ctx, &api.StartContainerRequest{Pod: x.pod, Container: x.ctr}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.StopContainer(ctx, &api.StopContainerRequest{Pod: x.pod, Container: x.ctr}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pd := range []*api.PodSandbox{f.gpu, f.cpu} {
		if _, err := c.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pd}); err != nil {
			t.Fatal(err)
		}
	}
	return created
}

// TestScopeWithoutRuntimeFiltering: on a runtime that does not say it
// evaluates scopes (no supported_events, as containerd and CRI-O), the
// stub keeps events about pods and containers out of scope from the
// handlers and answers them without changes, opting out of creations.
func TestScopeWithoutRuntimeFiltering(t *testing.T) {
	f := newScopeFixture()
	rt := stubtest.NewRuntime(t, stubtest.WithState([]*api.PodSandbox{f.gpu, f.cpu}, []*api.Container{f.gpuMain, f.side, f.cpuMn}))
	plugin := &seer{}
	_, p := startStub(t, rt, plugin, stub.WithScope(gpuMainScope))
	if !proto.Equal(p.ConfigureResponse().GetScope(), gpuMainScope) {
		t.Errorf("scope not sent to the runtime: %v", p.ConfigureResponse())
	}
	if got, want := plugin.take(), []string{"Synchronize [gpu][gpu-main]"}; !slices.Equal(got, want) {
		t.Errorf("Synchronize saw %q, want %q", got, want)
	}
	created := f.sendAll(t, p)
	want := []string{
		"RunPodSandbox gpu",
		"CreateContainer gpu-main", "ValidateContainerAdjustment gpu-main", "StartContainer gpu-main", "StopContainer gpu-main",
		"StopPodSandbox gpu",
	}
	if got := plugin.take(); !slices.Equal(got, want) {
		t.Errorf("handlers saw\n%q\nwant\n%q", got, want)
	}
	if rsp := created["gpu-main"]; len(rsp.GetAdjust().GetEnv()) != 1 || rsp.GetOptOut() != nil {
		t.Errorf("in scope: %v", rsp)
	}
	// Out of scope: an empty adjustment, opting out of the container, or
	// of its pod if the pod is out of scope.
	for id, optOut := range map[string]*api.OptOut{
		"gpu-side": {ContainerIds: []string{"gpu-side"}},
		"cpu-main": {PodIds: []string{"cpu"}},
	} {
		rsp := created[id]
		if rsp.GetAdjust() != nil || len(rsp.GetUpdate()) != 0 || len(rsp.GetEvict()) != 0 || !proto.Equal(rsp.GetOptOut(), optOut) {
			t.Errorf("%s: CreateContainer answered %v, want no changes and opt-out %v", id, rsp, optOut)
		}
	}
	rsp, err := p.Client().RunPodSandbox(testContext(t), &api.RunPodSandboxRequest{Pod: f.cpu})
	if err != nil || !proto.Equal(rsp.GetOptOut(), &api.OptOut{PodIds: []string{"cpu"}}) {
		t.Errorf("RunPodSandbox out of scope: %v, %v", rsp, err)
	}
	// Events through StateChange (runtimes of NRI v0.9 and older) too.
	for _, pd := range []*api.PodSandbox{f.cpu, f.gpu} {
		if _, err := p.Client().StateChange(testContext(t), &api.StateChangeEvent{Event: api.Event_STOP_POD_SANDBOX, Pod: pd}); err != nil {
			t.Fatal(err)
		}
	}
	if got := plugin.take(); !slices.Equal(got, []string{"StopPodSandbox gpu"}) {
		t.Errorf("StateChange: handlers saw %q, want StopPodSandbox gpu", got)
	}
}

// TestScopeOnFilteringRuntime: a runtime that advertises its events is
// nrikit's, which evaluates the scope itself: the stub does not filter a
// second time (this fake runtime does not filter, so every event reaches
// the handlers).
func TestScopeOnFilteringRuntime(t *testing.T) {
	f := newScopeFixture()
	rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(api.AllEvents),
		stubtest.WithState([]*api.PodSandbox{f.gpu, f.cpu}, []*api.Container{f.gpuMain, f.side, f.cpuMn}))
	plugin := &seer{}
	_, p := startStub(t, rt, plugin, stub.WithScope(gpuMainScope))
	if !proto.Equal(p.ConfigureResponse().GetScope(), gpuMainScope) {
		t.Errorf("scope not sent to the runtime: %v", p.ConfigureResponse())
	}
	if got := plugin.take(); !slices.Equal(got, []string{"Synchronize [gpu cpu][gpu-main gpu-side cpu-main]"}) {
		t.Errorf("Synchronize saw %q", got)
	}
	created := f.sendAll(t, p)
	if got := plugin.take(); len(got) != 2+3*4+2 {
		t.Errorf("handlers saw %d events, want all 14: %q", len(got), got)
	}
	for id, rsp := range created {
		if len(rsp.GetAdjust().GetEnv()) != 1 || rsp.GetOptOut() != nil {
			t.Errorf("%s: %v", id, rsp)
		}
	}
}

// TestScopeDecidedAtCreation: for a scope on container annotations, which
// plugins may change, a container's later events are delivered if the
// container was in scope when it was created, as nrikit's runtime does;
// the stub subscribes to CreateContainer and RemoveContainer for it.
func TestScopeDecidedAtCreation(t *testing.T) {
	scope := &api.PluginScope{ContainerAnnotations: []*api.AnnotationMatch{{Key: "gpu"}}}
	synced, marked, unmarked := ctr("synced", "p"), ctr("marked", "p"), ctr("unmarked", "p")
	synced.Annotations = map[string]string{"gpu": "1"}
	marked.Annotations = map[string]string{"gpu": "1"}
	rt := stubtest.NewRuntime(t, stubtest.WithState([]*api.PodSandbox{pod("p")}, []*api.Container{synced, ctr("other", "p")}))
	plugin := &starter{}
	_, p := startStub(t, rt, plugin, stub.WithScope(scope))
	if want := api.MaskOf(api.Event_START_CONTAINER, api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER); p.Events() != want {
		t.Errorf("subscribed to %s, want %s", p.Events(), want)
	}
	ctx := testContext(t)
	for _, c := range []*api.Container{marked, unmarked} {
		rsp, err := p.CreateContainer(ctx, pod("p"), c)
		if err != nil || rsp.GetAdjust() != nil {
			t.Fatalf("CreateContainer: %v, %v", rsp, err)
		}
	}
	// Later views of the containers do not change the decision.
	later := func(c *api.Container, annotated bool) *api.Container {
		c = proto.CloneOf(c)
		c.Annotations = nil
		if annotated {
			c.Annotations = map[string]string{"gpu": "1"}
		}
		return c
	}
	for _, c := range []*api.Container{later(synced, false), later(marked, false), later(unmarked, true), ctr("unknown", "p")} {
		if err := p.StartContainer(ctx, pod("p"), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := plugin.s.take(); !slices.Equal(got, []string{"StartContainer synced", "StartContainer marked"}) {
		t.Errorf("handlers saw %q", got)
	}
	// Removal ends it.
	if err := p.RemoveContainer(ctx, pod("p"), marked); err != nil {
		t.Fatal(err)
	}
	if err := p.StartContainer(ctx, pod("p"), marked); err != nil {
		t.Fatal(err)
	}
	if got := plugin.s.take(); len(got) != 0 {
		t.Errorf("events after removal reached the handler: %q", got)
	}
}

// The CEL expressions of TestScopeCEL.
const (
	gpuMainCEL = `pod.labels[?"accel"].orValue("") == "gpu" && container.name == "main"`
	// strictCEL fails to evaluate on a pod without the label.
	strictCEL = `pod.labels["accel"] == "gpu"`
)

// fakeCEL stands in for celscope.Compile in this package's tests, which
// must not import cel-go: go mod tidy in a module using the stub loads
// them, and cel-go's genproto packages are ambiguous next to an old
// genproto module in that module's graph (issue 39; upstream's differ
// plugin has one). It compiles the two expressions above to matchers
// that behave as celscope's do (an evaluation error logged at Warn
// through cfg.Logger, and no match); filter/celscope's stub_test.go runs
// the stub with the real compiler.
func fakeCEL(expr string, cfg filter.CELConfig) (filter.Matcher, error) {
	gpu := func(p *api.PodSandbox) bool { return p.GetLabels()["accel"] == "gpu" }
	switch expr {
	case gpuMainCEL:
		return celMatcher{pod: gpu, ctr: func(p *api.PodSandbox, c *api.Container) bool { return gpu(p) && c.GetName() == "main" }}, nil
	case strictCEL:
		strict := func(p *api.PodSandbox) bool {
			if _, ok := p.GetLabels()["accel"]; !ok {
				if cfg.Logger != nil {
					cfg.Logger.Warn("scope expression failed, treating as no match", "error", "no such key: accel")
				}
				return false
			}
			return gpu(p)
		}
		return celMatcher{pod: strict, ctr: func(p *api.PodSandbox, _ *api.Container) bool { return strict(p) }}, nil
	}
	return nil, fmt.Errorf("fakeCEL: unknown expression %q", expr)
}

type celMatcher struct {
	pod func(*api.PodSandbox) bool
	ctr func(*api.PodSandbox, *api.Container) bool
}

func (m celMatcher) MatchPod(p *api.PodSandbox) bool                         { return m.pod(p) }
func (m celMatcher) MatchContainer(p *api.PodSandbox, c *api.Container) bool { return m.ctr(p, c) }

// TestScopeCEL: a scope's CEL expression needs CEL support in the stub
// only where the stub evaluates the scope itself; with it, the stub
// enforces the expression with the compiler WithCEL gives it, and logs an
// evaluation error through its logger.
func TestScopeCEL(t *testing.T) {
	scope := &api.PluginScope{Cel: gpuMainCEL}
	f := newScopeFixture()

	t.Run("without CEL support", func(t *testing.T) {
		rt := stubtest.NewRuntime(t)
		s, _ := newStub(t, rt, &seer{}, stub.WithScope(scope))
		err := s.Start(testContext(t))
		if err == nil || !strings.Contains(err.Error(), "no CEL support compiled in") || !strings.Contains(err.Error(), "does not evaluate scopes") {
			t.Errorf("Start = %v, want a configuration failure for the missing CEL support", err)
		}
	})
	t.Run("on a runtime that evaluates it", func(t *testing.T) {
		rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(api.AllEvents))
		_, p := startStub(t, rt, &seer{}, stub.WithScope(scope))
		if !proto.Equal(p.ConfigureResponse().GetScope(), scope) {
			t.Errorf("scope not sent: %v", p.ConfigureResponse())
		}
	})
	t.Run("with CEL support", func(t *testing.T) {
		rt := stubtest.NewRuntime(t)
		plugin := &seer{}
		_, p := startStub(t, rt, plugin, stub.WithScope(scope), stub.WithCEL(fakeCEL))
		plugin.take()
		f.sendAll(t, p)
		want := []string{
			"RunPodSandbox gpu",
			"CreateContainer gpu-main", "ValidateContainerAdjustment gpu-main", "StartContainer gpu-main", "StopContainer gpu-main",
			"StopPodSandbox gpu",
		}
		if got := plugin.take(); !slices.Equal(got, want) {
			t.Errorf("handlers saw\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("evaluation errors do not match", func(t *testing.T) {
		rt := stubtest.NewRuntime(t)
		plugin := &seer{}
		logs, logOpt := recorder()
		_, p := startStub(t, rt, plugin, stub.WithScope(&api.PluginScope{Cel: strictCEL}), stub.WithCEL(fakeCEL), logOpt)
		plugin.take()
		if _, err := p.RunPodSandbox(testContext(t), f.cpu); err != nil {
			t.Fatal(err)
		}
		if got := plugin.take(); len(got) != 0 {
			t.Errorf("a failed evaluation reached the handler: %q", got)
		}
		logs.waitFor(t, slog.LevelWarn, "scope expression failed")
	})
}

// TestInvalidScope: a scope that does not compile fails the registration
// on a runtime that does not evaluate scopes (nrikit's runtime rejects
// it itself).
func TestInvalidScope(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	s, _ := newStub(t, rt, &seer{}, stub.WithScope(&api.PluginScope{PodLabelSelector: "accel in (gpu"}))
	if err := s.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "stub: WithScope: filter: pod_label_selector:") {
		t.Errorf("Start = %v, want the scope's error", err)
	}
	if _, err := stub.New(&seer{}, stub.WithCEL(nil)); err == nil {
		t.Error("WithCEL(nil) accepted")
	}
}
