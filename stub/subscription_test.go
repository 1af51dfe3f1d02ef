package stub_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/handler"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// podUpdater handles CreateContainer, UpdatePodSandbox and
// PostUpdatePodSandbox.
type podUpdater struct{ creator }

func (*podUpdater) UpdatePodSandbox(context.Context, *api.PodSandbox, *api.LinuxResources, *api.LinuxResources) error {
	return nil
}

func (*podUpdater) PostUpdatePodSandbox(context.Context, *api.PodSandbox) error { return nil }

// validator also validates adjustments.
type validator struct{ podUpdater }

func (*validator) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if req.GetAdjust().GetAnnotations()["forbidden"] != "" {
		return errors.New("forbidden annotation")
	}
	return nil
}

// The reported scenario (issue #4): a plugin implementing
// UpdatePodSandbox against a runtime that does not deliver it. The old
// runtime rejects subscriptions to events it does not know, so
// registration only succeeds if the stub drops the event.
func TestSubscriptionByVersionReportedScenario(t *testing.T) {
	rt := stubtest.NewRuntime(t,
		stubtest.WithOrder(stubtest.UpstreamOrder),
		stubtest.WithNRIVersion(""), // containerd/nri v0.8.0 sends none
		stubtest.WithRuntime("containerd", "v1.7.30"),
		stubtest.WithAcceptedEvents(mustMask(t, "RunPodSandbox,StopPodSandbox,RemovePodSandbox,container")&^
			api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)),
	)
	logs, logOpt := recorder()
	s, p := startStub(t, rt, &podUpdater{}, logOpt)

	want := api.MaskOf(api.Event_CREATE_CONTAINER)
	if got := s.Subscription(); got != want {
		t.Errorf("Subscription() = %s, want %s", got, want)
	}
	if got := p.Events(); got != want {
		t.Errorf("runtime subscribed plugin to %s, want %s", got, want)
	}
	if got := s.RuntimeNRIVersion(); got != "v0.8.0" {
		t.Errorf("RuntimeNRIVersion() = %q, want inferred v0.8.0", got)
	}
	notes := logs.find(slog.LevelInfo, "does not support")
	if len(notes) != 1 {
		t.Fatalf("got %d notes about dropped events, want 1", len(notes))
	}
	if got := notes[0]["dropped"]; got != "UpdatePodSandbox,PostUpdatePodSandbox" {
		t.Errorf("dropped = %q", got)
	}
	if !strings.Contains(notes[0]["basis"], "v0.8.0") || !strings.Contains(notes[0]["basis"], "containerd v1.7.30") {
		t.Errorf("basis = %q", notes[0]["basis"])
	}
}

func TestSubscriptionIntersection(t *testing.T) {
	all := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX,
		api.Event_POST_UPDATE_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	podUpd := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX)
	create := api.MaskOf(api.Event_CREATE_CONTAINER)
	for _, tc := range []struct {
		name string
		opts []stubtest.Option
		want api.EventMask
	}{
		{"advertised", []stubtest.Option{stubtest.WithSupportedEvents(mustMask(t, "CreateContainer,UpdatePodSandbox,StopContainer"))},
			api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX)},
		{"advertised wins over version", []stubtest.Option{stubtest.WithSupportedEvents(create), stubtest.WithNRIVersion("v0.12.5")}, create},
		{"reported v0.12.5", []stubtest.Option{stubtest.WithNRIVersion("v0.12.5")}, all},
		{"reported v0.10.0", []stubtest.Option{stubtest.WithNRIVersion("v0.10.0")}, all},
		{"reported v0.9.0", []stubtest.Option{stubtest.WithNRIVersion("v0.9.0")}, create},
		{"inferred containerd v2.2.1", []stubtest.Option{stubtest.WithNRIVersion(""), stubtest.WithRuntime("containerd", "v2.2.1")}, all},
		{"inferred containerd v2.1.4", []stubtest.Option{stubtest.WithNRIVersion(""), stubtest.WithRuntime("containerd", "v2.1.4")}, create},
		{"inferred cri-o 1.33.2 pre-release NRI", []stubtest.Option{stubtest.WithNRIVersion(""), stubtest.WithRuntime("cri-o", "1.33.2")}, podUpd},
		{"unknown version placeholder", []stubtest.Option{stubtest.WithNRIVersion("0.0.0-unknown"), stubtest.WithRuntime("cri-o", "v1.34.1")}, all},
		{"unknown runtime", []stubtest.Option{stubtest.WithNRIVersion(""), stubtest.WithRuntime("mystery", "v1.0.0")}, create},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := stubtest.NewRuntime(t, tc.opts...)
			s, p := startStub(t, rt, &validator{})
			if got := s.Subscription(); got != tc.want {
				t.Errorf("Subscription() = %s, want %s", got, tc.want)
			}
			if got := api.EventMask(p.ConfigureResponse().GetEvents()); got != tc.want {
				t.Errorf("ConfigureResponse.events = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRequiredEventUnsupported(t *testing.T) {
	for _, order := range []stubtest.Order{stubtest.NrikitOrder, stubtest.UpstreamOrder} {
		rt := stubtest.NewRuntime(t, stubtest.WithOrder(order),
			stubtest.WithSupportedEvents(mustMask(t, "CreateContainer,StopContainer")))
		s, p := newStub(t, rt, &podUpdater{}, stub.WithRequiredEvents(api.MaskOf(api.Event_UPDATE_POD_SANDBOX)))
		err := s.Start(testContext(t))
		var ue *stub.UnsupportedEventsError
		if !errors.As(err, &ue) || !ue.Required || ue.Events != api.MaskOf(api.Event_UPDATE_POD_SANDBOX) {
			t.Fatalf("order %d: Start = %v, want UnsupportedEventsError for UpdatePodSandbox", order, err)
		}
		if !strings.Contains(err.Error(), "UpdatePodSandbox") {
			t.Errorf("error %q does not name the event", err)
		}
		<-p.Done()
		if order == stubtest.NrikitOrder {
			if got := p.Err(); got == nil || !strings.Contains(got.Error(), "required events not supported by the runtime: UpdatePodSandbox") {
				t.Errorf("runtime reported %v", got)
			}
		}
	}
}

func TestRequiredEventSupportedOthersDropped(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(mustMask(t, "CreateContainer,StopContainer")))
	s, _ := startStub(t, rt, &podUpdater{}, stub.WithRequiredEvents(api.MaskOf(api.Event_CREATE_CONTAINER)))
	if got := s.Subscription(); got != api.MaskOf(api.Event_CREATE_CONTAINER) {
		t.Errorf("Subscription() = %s", got)
	}
}

func TestNoEventLeft(t *testing.T) {
	type onlyPodUpdate struct{ podUpdater }
	rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(mustMask(t, "StopContainer")))
	s, _ := newStub(t, rt, &onlyPodUpdate{})
	err := s.Start(testContext(t))
	var ue *stub.UnsupportedEventsError
	if !errors.As(err, &ue) || ue.Required {
		t.Fatalf("Start = %v, want an UnsupportedEventsError for the whole subscription", err)
	}
}

func TestWithSubscriptionAndConfigureSubscription(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	s, _ := startStub(t, rt, &validator{}, stub.WithSubscription(api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX)))
	if got, want := s.Subscription(), api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX); got != want {
		t.Errorf("Subscription() = %s, want %s", got, want)
	}

	if _, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithSubscription(api.MaskOf(api.Event_STOP_CONTAINER))); err == nil {
		t.Error("New accepted a subscription to an event without a handler")
	}
	if _, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithRequiredEvents(api.MaskOf(api.Event_STOP_CONTAINER))); err == nil {
		t.Error("New accepted a required event without a handler")
	}
}

// TestWithDeclarations checks that the stub applies a handler.Declarations
// as the options of its fields, refusing what they refuse.
func TestWithDeclarations(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	mask := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_UPDATE_POD_SANDBOX)
	s, _ := startStub(t, rt, &validator{}, stub.WithDeclarations(handler.Declarations{Subscription: mask}))
	if got := s.Subscription(); got != mask {
		t.Errorf("Subscription() = %s, want %s", got, mask)
	}
	for _, d := range []handler.Declarations{
		{Subscription: api.MaskOf(api.Event_STOP_CONTAINER)},
		{RequiredEvents: api.MaskOf(api.Event_STOP_CONTAINER)},
		{RequiredEvents: 1 << 30},
	} {
		if _, err := stub.New(&creator{}, stub.WithPluginIdx("10"), stub.WithDeclarations(d)); err == nil {
			t.Errorf("New accepted declarations %+v", d)
		}
	}
}

// configSubscriber subscribes from its Configure handler.
type configSubscriber struct {
	validator
	events api.EventMask
}

func (c *configSubscriber) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return c.events, nil
}

func TestConfigureHandlerSubscription(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithSupportedEvents(mustMask(t, "CreateContainer,UpdatePodSandbox")))
	s, _ := startStub(t, rt, &configSubscriber{events: mustMask(t, "UpdatePodSandbox,PostUpdatePodSandbox")})
	if got, want := s.Subscription(), api.MaskOf(api.Event_UPDATE_POD_SANDBOX); got != want {
		t.Errorf("Subscription() = %s, want %s", got, want)
	}

	rt2 := stubtest.NewRuntime(t)
	s2, _ := newStub(t, rt2, &configSubscriber{events: mustMask(t, "StopContainer")})
	if err := s2.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "StopContainer") {
		t.Errorf("Start with Configure subscribing to an unhandled event = %v", err)
	}
}
