//go:build !wasip1

package wasmguest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/handler"
)

// everything implements every handler interface.
type everything struct{ calls []string }

var (
	_ handler.ConfigureInterface                   = (*everything)(nil)
	_ handler.SynchronizeInterface                 = (*everything)(nil)
	_ handler.ShutdownInterface                    = (*everything)(nil)
	_ handler.RunPodInterface                      = (*everything)(nil)
	_ handler.UpdatePodInterface                   = (*everything)(nil)
	_ handler.PostUpdatePodInterface               = (*everything)(nil)
	_ handler.StopPodInterface                     = (*everything)(nil)
	_ handler.RemovePodInterface                   = (*everything)(nil)
	_ handler.CreateContainerInterface             = (*everything)(nil)
	_ handler.PostCreateContainerInterface         = (*everything)(nil)
	_ handler.StartContainerInterface              = (*everything)(nil)
	_ handler.PostStartContainerInterface          = (*everything)(nil)
	_ handler.UpdateContainerInterface             = (*everything)(nil)
	_ handler.PostUpdateContainerInterface         = (*everything)(nil)
	_ handler.StopContainerInterface               = (*everything)(nil)
	_ handler.RemoveContainerInterface             = (*everything)(nil)
	_ handler.ValidateContainerAdjustmentInterface = (*everything)(nil)
)

func (e *everything) note(s string) { e.calls = append(e.calls, s) }

func (e *everything) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	e.note("Configure:" + config)
	if config == "only-create" {
		return api.MaskOf(api.Event_CREATE_CONTAINER), nil
	}
	return 0, nil
}
func (e *everything) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	e.note("Synchronize")
	return []*api.ContainerUpdate{{ContainerId: "n", IgnoreFailure: len(pods) == 2 && len(ctrs) == 1}}, nil
}
func (e *everything) Shutdown(context.Context) { e.note("Shutdown") }
func (e *everything) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	e.note("RunPodSandbox:" + p.GetName())
	return nil
}
func (e *everything) UpdatePodSandbox(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error {
	e.note("UpdatePodSandbox")
	return nil
}
func (e *everything) PostUpdatePodSandbox(context.Context, *api.PodSandbox) error {
	e.note("PostUpdatePodSandbox")
	return nil
}
func (e *everything) StopPodSandbox(context.Context, *api.PodSandbox) error {
	e.note("StopPodSandbox")
	return nil
}
func (e *everything) RemovePodSandbox(context.Context, *api.PodSandbox) error {
	e.note("RemovePodSandbox")
	return nil
}
func (e *everything) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	e.note("CreateContainer:" + c.GetName())
	switch c.GetName() {
	case "fail":
		return nil, nil, errors.New("no")
	case "panic":
		panic("boom")
	}
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("K", "V")
	return adj, nil, nil
}
func (e *everything) PostCreateContainer(context.Context, *api.PodSandbox, *api.Container) error {
	e.note("PostCreateContainer")
	return nil
}
func (e *everything) StartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	e.note("StartContainer")
	return nil
}
func (e *everything) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	e.note("PostStartContainer")
	return nil
}
func (e *everything) UpdateContainer(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	e.note("UpdateContainer")
	return nil, nil
}
func (e *everything) PostUpdateContainer(context.Context, *api.PodSandbox, *api.Container) error {
	e.note("PostUpdateContainer")
	return nil
}
func (e *everything) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	e.note("StopContainer")
	return nil, nil
}
func (e *everything) RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error {
	e.note("RemoveContainer")
	return nil
}
func (e *everything) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	e.note("ValidateContainerAdjustment")
	return errors.New("rejected")
}

// evicter implements the stub's nrikit extensions.
type evicter struct{}

var (
	_ handler.CreateContainerEvicter     = evicter{}
	_ handler.UpdateContainerEvicter     = evicter{}
	_ handler.SynchronizeOptOutInterface = evicter{}
)

func (evicter) CreateContainerWithEvictions(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, nil, []*api.ContainerEviction{{ContainerId: "victim"}}, nil
}
func (evicter) UpdateContainerWithEvictions(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, nil, nil
}
func (evicter) SynchronizeWithOptOut(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, *api.OptOut, error) {
	return nil, &api.OptOut{PodIds: []string{"p"}}, nil
}

// handle encodes req, calls g.Handle and decodes into rsp.
func handle(t *testing.T, g *Guest, fn string, req, rsp proto.Message) error {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Handle(fn, b)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(out, rsp); err != nil {
		t.Fatalf("decoding the %s response: %v", fn, err)
	}
	return nil
}

func TestImplementedMatchesTheStub(t *testing.T) {
	g, err := New(&everything{})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Implemented(); got != api.AllEvents {
		t.Errorf("Implemented = %s, want every event %s", got, api.AllEvents)
	}
	g, err = New(evicter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_CONTAINER); g.Implemented() != want {
		t.Errorf("Implemented = %s, want %s", g.Implemented(), want)
	}
	rsp := &api.CreateContainerResponse{}
	if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Container: &api.Container{Id: "c"}}, rsp); err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetEvict()) != 1 {
		t.Errorf("evicter's CreateContainer answered %v, want one eviction", rsp)
	}
	srsp := &api.SynchronizeResponse{}
	if err := handle(t, g, FuncSynchronize, &api.SynchronizeRequest{}, srsp); err != nil || srsp.GetOptOut() == nil {
		t.Errorf("SynchronizeWithOptOut: %v, %v; want an opt-out", srsp, err)
	}
}

func TestNewErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		plugin any
		opts   []Option
	}{
		"nil plugin":         {nil, nil},
		"no handlers":        {struct{}{}, nil},
		"nil option":         {&everything{}, []Option{nil}},
		"empty mask":         {&everything{}, []Option{WithSubscription(0)}},
		"unhandled event":    {evicter{}, []Option{WithSubscription(api.MaskOf(api.Event_RUN_POD_SANDBOX))}},
		"nil scope":          {&everything{}, []Option{WithScope(nil)}},
		"nil log function":   {&everything{}, []Option{WithLog(nil)}},
		"required unhandled": {evicter{}, []Option{WithRequiredEvents(api.MaskOf(api.Event_RUN_POD_SANDBOX))}},
		"required unknown":   {&everything{}, []Option{WithRequiredEvents(api.EventMask(1 << 30))}},
	} {
		if _, err := New(tc.plugin, tc.opts...); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

// TestConfigureSubscription checks the guest's subscription as the
// stub's: what the plugin wants, restricted to what the runtime delivers
// by the events it advertises, else by its NRI version (reported, or
// inferred from its name and version, or the oldest release's events).
func TestConfigureSubscription(t *testing.T) {
	oldest := api.AllEvents.Clear(api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	create := api.MaskOf(api.Event_CREATE_CONTAINER)
	for _, tc := range []struct {
		name string
		req  *api.ConfigureRequest
		opts []Option
		want api.EventMask
	}{
		{"implemented", &api.ConfigureRequest{NRIVersion: api.NRIVersion}, nil, api.AllEvents},
		{"handler's choice", &api.ConfigureRequest{Config: "only-create", NRIVersion: api.NRIVersion}, nil, create},
		{"option", &api.ConfigureRequest{NRIVersion: api.NRIVersion}, []Option{WithSubscription(api.PodEvents)}, api.PodEvents},
		{"runtime's events", &api.ConfigureRequest{SupportedEvents: int32(api.PodEvents | create)}, nil, api.PodEvents | create},
		{"NRI version", &api.ConfigureRequest{NRIVersion: "v0.9.0"}, nil, oldest},
		{"inferred NRI version", &api.ConfigureRequest{RuntimeName: "containerd", RuntimeVersion: "v2.2.1"}, nil, api.AllEvents},
		{"unknown runtime", &api.ConfigureRequest{RuntimeName: "x", RuntimeVersion: "v1"}, nil, oldest},
		{"unknown runtime, required", &api.ConfigureRequest{RuntimeName: "x"},
			[]Option{WithRequiredEvents(api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT))}, oldest.Set(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)},
		{"default configuration", &api.ConfigureRequest{NRIVersion: api.NRIVersion}, []Option{WithDefaultConfig("only-create")}, create},
		{"runtime's configuration wins", &api.ConfigureRequest{Config: "all", NRIVersion: api.NRIVersion}, []Option{WithDefaultConfig("only-create")}, api.AllEvents},
	} {
		p := &everything{}
		g, err := New(p, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		rsp := &api.ConfigureResponse{}
		if err := handle(t, g, FuncConfigure, tc.req, rsp); err != nil {
			t.Fatalf("%s: Configure: %v", tc.name, err)
		}
		if got := api.EventMask(rsp.GetEvents()); got != tc.want {
			t.Errorf("%s: events = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestConfigureRequiredEvents checks that a runtime that cannot deliver
// a required event fails Configure, naming it, as for the stub.
func TestConfigureRequiredEvents(t *testing.T) {
	g, err := New(&everything{}, WithRequiredEvents(api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)))
	if err != nil {
		t.Fatal(err)
	}
	err = handle(t, g, FuncConfigure, &api.ConfigureRequest{NRIVersion: "v0.9.0"}, &api.ConfigureResponse{})
	var ue *stub.UnsupportedEventsError
	if !errors.As(err, &ue) || !ue.Required || ue.Events != api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT) {
		t.Errorf("Configure on NRI v0.9.0 = %v, want the stub's UnsupportedEventsError for ValidateContainerAdjustment", err)
	}
	if err == nil || !strings.Contains(err.Error(), "ValidateContainerAdjustment") {
		t.Errorf("Configure error %q does not name the event", err)
	}
}

func TestDispatch(t *testing.T) {
	p := &everything{}
	g, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	pod, ctr := &api.PodSandbox{Id: "p", Name: "pod"}, &api.Container{Id: "c", Name: "ctr", PodSandboxId: "p"}
	ccr := &api.CreateContainerResponse{}
	if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: pod, Container: ctr}, ccr); err != nil {
		t.Fatal(err)
	}
	if env := ccr.GetAdjust().GetEnv(); len(env) != 1 || env[0].GetKey() != "K" {
		t.Errorf("CreateContainer adjustment = %v", ccr.GetAdjust())
	}
	if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: pod, Container: &api.Container{Name: "fail"}}, ccr); err == nil || err.Error() != "no" {
		t.Errorf("failing handler: %v, want its error", err)
	}
	err = handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: pod, Container: &api.Container{Name: "panic"}}, ccr)
	if err == nil || !strings.Contains(err.Error(), "CreateContainer handler panicked: boom") {
		t.Errorf("panicking handler: %v", err)
	}
	vr := &api.ValidateContainerAdjustmentResponse{}
	if err := handle(t, g, FuncValidate, &api.ValidateContainerAdjustmentRequest{Pod: pod, Container: ctr}, vr); err != nil || !vr.GetReject() || vr.GetReason() != "rejected" {
		t.Errorf("Validate: %v, %v; want a rejection", vr, err)
	}
	// Synchronize in two parts reaches the handler once, with both.
	sr := &api.SynchronizeResponse{}
	if err := handle(t, g, FuncSynchronize, &api.SynchronizeRequest{Pods: []*api.PodSandbox{pod}, More: true}, sr); err != nil || !sr.GetMore() {
		t.Errorf("first Synchronize part: %v, %v; want more", sr, err)
	}
	if err := handle(t, g, FuncSynchronize, &api.SynchronizeRequest{Pods: []*api.PodSandbox{{Id: "q"}}, Containers: []*api.Container{ctr}}, sr); err != nil || len(sr.GetUpdate()) != 1 || !sr.GetUpdate()[0].GetIgnoreFailure() {
		t.Errorf("last Synchronize part: %v, %v; want the handler's update for 2 pods, 1 container", sr, err)
	}
	for _, fn := range []string{FuncRunPod, FuncUpdatePod, FuncPostUpdatePod, FuncStopPod, FuncRemovePod,
		FuncPostCreate, FuncStartContainer, FuncPostStart, FuncUpdateContainer, FuncPostUpdate, FuncStopContainer, FuncRemoveContainer, FuncShutdown} {
		if _, err := g.Handle(fn, nil); err != nil {
			t.Errorf("%s with an empty request: %v", fn, err)
		}
	}
	if err := handle(t, g, FuncStateChange, &api.StateChangeEvent{Event: api.Event_START_CONTAINER, Pod: pod, Container: ctr}, &api.Empty{}); err != nil {
		t.Errorf("StateChange: %v", err)
	}
	want := "CreateContainer:ctr CreateContainer:fail CreateContainer:panic ValidateContainerAdjustment Synchronize " +
		"RunPodSandbox: UpdatePodSandbox PostUpdatePodSandbox StopPodSandbox RemovePodSandbox PostCreateContainer StartContainer " +
		"PostStartContainer UpdateContainer PostUpdateContainer StopContainer RemoveContainer Shutdown StartContainer"
	if got := strings.Join(p.calls, " "); got != want {
		t.Errorf("handler calls:\n got %s\nwant %s", got, want)
	}
	if _, err := g.Handle("plugin_nonsense", nil); err == nil {
		t.Error("unknown function succeeded")
	}
	if _, err := g.Handle(FuncCreateContainer, []byte{0xff, 0xff}); err == nil || !strings.Contains(err.Error(), "decoding") {
		t.Errorf("undecodable request: %v, want a decoding error", err)
	}
}

func TestUnimplementedAnswerEmpty(t *testing.T) {
	g, err := New(evicter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{FuncRunPod, FuncStopContainer, FuncValidate, FuncShutdown, FuncConfigure} {
		out, err := g.Handle(fn, nil)
		if err != nil {
			t.Errorf("%s: %v", fn, err)
		}
		if fn != FuncConfigure && len(out) != 0 {
			t.Errorf("%s answered %d bytes, want an empty response", fn, len(out))
		}
	}
}

func TestScopeEnforcedOnRuntimesThatDoNotEvaluateIt(t *testing.T) {
	scope := &api.PluginScope{Namespaces: []string{"kube-*"}}
	in := &api.PodSandbox{Id: "in", Namespace: "kube-system"}
	out := &api.PodSandbox{Id: "out", Namespace: "default"}
	for _, tc := range []struct {
		name      string
		supported api.EventMask
		wantCalls string
	}{
		{"upstream runtime", 0, "CreateContainer:a"},
		{"nrikit runtime", api.AllEvents, "CreateContainer:a CreateContainer:b"},
	} {
		p := &everything{}
		g, err := New(p, WithScope(scope))
		if err != nil {
			t.Fatal(err)
		}
		crsp := &api.ConfigureResponse{}
		if err := handle(t, g, FuncConfigure, &api.ConfigureRequest{SupportedEvents: int32(tc.supported)}, crsp); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(crsp.GetScope(), scope) {
			t.Errorf("%s: Configure response scope = %v, want %v", tc.name, crsp.GetScope(), scope)
		}
		p.calls = nil
		rsp := &api.CreateContainerResponse{}
		if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: in, Container: &api.Container{Id: "a", Name: "a"}}, rsp); err != nil {
			t.Fatal(err)
		}
		if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: out, Container: &api.Container{Id: "b", Name: "b"}}, rsp); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.calls, " "); got != tc.wantCalls {
			t.Errorf("%s: handler calls %q, want %q", tc.name, got, tc.wantCalls)
		}
		if tc.supported == 0 && (rsp.GetOptOut() == nil || rsp.GetOptOut().GetPodIds()[0] != "out") {
			t.Errorf("%s: out-of-scope CreateContainer answered %v, want an opt-out of the pod", tc.name, rsp)
		}
	}
	g, err := New(&everything{}, WithScope(&api.PluginScope{Cel: "pod.name == 'x'"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Handle(FuncConfigure, nil); err == nil || !strings.Contains(err.Error(), "CEL") {
		t.Errorf("Configure with a CEL scope on a runtime that does not evaluate scopes: %v, want an error about CEL", err)
	}
}

// TestScopeDecidedAtCreation checks that a scope on container
// annotations, which a plugin may change after the container's creation,
// is decided when the container is created (or synchronized) and holds
// for its later events, as in the stub: the guest subscribes to
// CreateContainer and RemoveContainer to remember the containers in
// scope.
func TestScopeDecidedAtCreation(t *testing.T) {
	scope := &api.PluginScope{ContainerAnnotations: []*api.AnnotationMatch{{Key: "gpu", Op: api.AnnotationMatch_EXISTS}}}
	p := &everything{}
	g, err := New(p, WithScope(scope), WithSubscription(api.MaskOf(api.Event_START_CONTAINER, api.Event_STOP_CONTAINER)))
	if err != nil {
		t.Fatal(err)
	}
	crsp := &api.ConfigureResponse{}
	if err := handle(t, g, FuncConfigure, &api.ConfigureRequest{NRIVersion: api.NRIVersion}, crsp); err != nil {
		t.Fatal(err)
	}
	want := api.MaskOf(api.Event_START_CONTAINER, api.Event_STOP_CONTAINER, api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER)
	if got := api.EventMask(crsp.GetEvents()); got != want {
		t.Errorf("subscription %s, want %s (with the events that track containers)", got, want)
	}
	pod := &api.PodSandbox{Id: "p", Namespace: "default"}
	gpu := map[string]string{"gpu": "1"}
	synced := &api.Container{Id: "s", Name: "synced", PodSandboxId: "p", Annotations: gpu}
	if err := handle(t, g, FuncSynchronize, &api.SynchronizeRequest{Pods: []*api.PodSandbox{pod}, Containers: []*api.Container{synced}}, &api.SynchronizeResponse{}); err != nil {
		t.Fatal(err)
	}
	in := &api.Container{Id: "in", Name: "in", PodSandboxId: "p", Annotations: gpu}
	out := &api.Container{Id: "out", Name: "out", PodSandboxId: "p"}
	for _, c := range []*api.Container{in, out} {
		rsp := &api.CreateContainerResponse{}
		if err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: pod, Container: c}, rsp); err != nil {
			t.Fatal(err)
		}
		if c == out && !slices.Equal(rsp.GetOptOut().GetContainerIds(), []string{"out"}) {
			t.Errorf("CreateContainer out of scope answered %v, want an opt-out of the container", rsp)
		}
	}
	p.calls = nil
	// After creation the annotations change: the decision holds.
	start := func(c *api.Container) {
		t.Helper()
		if err := handle(t, g, FuncStartContainer, &api.StartContainerRequest{Pod: pod, Container: c}, &api.StartContainerResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	start(&api.Container{Id: "in", Name: "in", PodSandboxId: "p"})
	start(&api.Container{Id: "out", Name: "out", PodSandboxId: "p", Annotations: gpu})
	start(&api.Container{Id: "s", Name: "synced", PodSandboxId: "p"})
	if err := handle(t, g, FuncRemoveContainer, &api.RemoveContainerRequest{Pod: pod, Container: in}, &api.RemoveContainerResponse{}); err != nil {
		t.Fatal(err)
	}
	start(in) // removed: forgotten
	if got, want := strings.Join(p.calls, " "), "StartContainer StartContainer RemoveContainer"; got != want {
		t.Errorf("handler calls %q, want %q (in and synced started, out not, nothing after removal)", got, want)
	}
}

// notInterested opts out with the sentinels, wrapped, as a plugin built
// for both worlds would.
type notInterested struct{}

func (notInterested) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return fmt.Errorf("pod %s: %w", pod.GetName(), ErrNotInterestedInPod)
}
func (notInterested) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("SEEN", "1")
	if ctr.GetName() == "pod-out" {
		return adj, nil, ErrNotInterestedInPod
	}
	return adj, nil, fmt.Errorf("wrapped: %w", ErrNotInterestedInContainer)
}
func (notInterested) PostStartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return ErrNotInterestedInContainer
}
func (notInterested) StopPodSandbox(context.Context, *api.PodSandbox) error {
	return ErrNotInterestedInPod
}
func (notInterested) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) error {
	return ErrNotInterestedInContainer
}

// TestOptOutSentinels checks that the stub's sentinels, which are
// wasmguest's, become opt-outs in RunPodSandbox and CreateContainer
// answers and success elsewhere.
func TestOptOutSentinels(t *testing.T) {
	if ErrNotInterestedInPod != stub.ErrNotInterestedInPod || ErrNotInterestedInContainer != stub.ErrNotInterestedInContainer {
		t.Fatal("wasmguest's sentinels are not the stub's")
	}
	g, err := New(notInterested{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "p1", Name: "p"}
	run := &api.RunPodSandboxResponse{}
	if err := handle(t, g, FuncRunPod, &api.RunPodSandboxRequest{Pod: pod}, run); err != nil || !slices.Equal(run.GetOptOut().GetPodIds(), []string{"p1"}) {
		t.Errorf("RunPodSandbox: %v, %v; want an opt-out of p1", run, err)
	}
	for _, tc := range []struct {
		name      string
		pods, ctr []string
	}{
		{"pod-out", []string{"p1"}, nil},
		{"ctr-out", nil, []string{"c1"}},
	} {
		rsp := &api.CreateContainerResponse{}
		err := handle(t, g, FuncCreateContainer, &api.CreateContainerRequest{Pod: pod, Container: &api.Container{Id: "c1", Name: tc.name}}, rsp)
		if err != nil || !slices.Equal(rsp.GetOptOut().GetPodIds(), tc.pods) || !slices.Equal(rsp.GetOptOut().GetContainerIds(), tc.ctr) ||
			len(rsp.GetAdjust().GetEnv()) != 1 {
			t.Errorf("CreateContainer %s: %v, %v; want the adjustment and an opt-out of %v %v", tc.name, rsp, err, tc.pods, tc.ctr)
		}
	}
	if err := handle(t, g, FuncPostStart, &api.PostStartContainerRequest{Pod: pod, Container: &api.Container{Id: "c1"}}, &api.PostStartContainerResponse{}); err != nil {
		t.Errorf("PostStartContainer with a sentinel: %v, want success", err)
	}
	if err := handle(t, g, FuncStopPod, &api.StopPodSandboxRequest{Pod: pod}, &api.StopPodSandboxResponse{}); err != nil {
		t.Errorf("StopPodSandbox with a sentinel: %v, want success", err)
	}
	if err := handle(t, g, FuncStateChange, &api.StateChangeEvent{Event: api.Event_STOP_POD_SANDBOX, Pod: pod}, &api.Empty{}); err != nil {
		t.Errorf("StateChange with a sentinel: %v, want success", err)
	}
	// A validator's sentinel accepts the adjustment, as in the stub.
	vr := &api.ValidateContainerAdjustmentResponse{}
	if err := handle(t, g, FuncValidate, &api.ValidateContainerAdjustmentRequest{Pod: pod, Container: &api.Container{Id: "c1"}}, vr); err != nil || vr.GetReject() {
		t.Errorf("ValidateContainerAdjustment with a sentinel: %v, %v; want acceptance", vr, err)
	}
}
