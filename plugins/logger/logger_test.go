package logger

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// syncBuffer is a bytes.Buffer safe for the stub's concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogsEvents(t *testing.T) {
	var out syncBuffer
	rt := stubtest.NewRuntime(t)
	_, p := rt.StartPlugin(t, New(slog.New(slog.NewTextHandler(&out, nil)), 0))
	if got := p.Events(); got != api.AllEvents {
		t.Errorf("subscribed to %s, want every event", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := &api.PodSandbox{Id: "p1", Name: "web", Namespace: "prod", Uid: "u1"}
	ctr := &api.Container{Id: "c1", PodSandboxId: "p1", Name: "nginx", Args: []string{"nginx"}}
	if _, err := p.RunPodSandbox(ctx, pod); err != nil {
		t.Fatal(err)
	}
	rsp, err := p.CreateContainer(ctx, pod, ctr)
	if err != nil {
		t.Fatal(err)
	}
	if rsp.GetAdjust() != nil && len(rsp.GetAdjust().GetEnv()) > 0 {
		t.Errorf("the logger changed the container: %v", rsp.GetAdjust())
	}
	if err := p.RemoveContainer(ctx, pod, ctr); err != nil {
		t.Fatal(err)
	}
	log := out.String()
	for _, want := range []string{"msg=RunPodSandbox pod=prod/web", "msg=CreateContainer pod=prod/web container=nginx", "msg=RemoveContainer"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestConfiguredEvents(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithConfig("events: [CreateContainer, StopContainer]"))
	_, p := rt.StartPlugin(t, New(slog.New(slog.DiscardHandler), 0))
	want := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER)
	if got := p.Events(); got != want {
		t.Errorf("subscribed to %s, want %s", got, want)
	}
	rt2 := stubtest.NewRuntime(t)
	_, p2 := rt2.StartPlugin(t, New(slog.New(slog.DiscardHandler), api.MaskOf(api.Event_RUN_POD_SANDBOX)))
	if got := p2.Events(); got != api.MaskOf(api.Event_RUN_POD_SANDBOX) {
		t.Errorf("flag subscription: %s", got)
	}
}

// TestAllIsEveryHandledEvent checks that "all", from the flag or the
// configuration, subscribes to the events the logger handles (0, which the
// stub resolves), not to api.AllEvents: with an event added to the
// protocol and no handler for it in the logger, the stub refused
// api.AllEvents and the logger failed to register.
func TestAllIsEveryHandledEvent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		events api.EventMask
		config string
	}{
		{"flag", api.AllEvents, ""},
		{"config", 0, "events: all"},
	} {
		got, err := New(slog.New(slog.DiscardHandler), tc.events).Configure(ctx, tc.config, "rt", "v1")
		if err != nil || got != 0 {
			t.Errorf("%s: Configure subscribed to %s (%v), want 0: every event the logger handles", tc.name, got, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for cfg, want := range map[string]api.EventMask{
		"":                                      0,
		"events: all":                           api.AllEvents,
		"events: CreateContainer,StopContainer": api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER),
		"events: [RunPodSandbox]":               api.MaskOf(api.Event_RUN_POD_SANDBOX),
	} {
		c, err := ParseConfig(cfg)
		if err != nil || c.Events.Mask != want {
			t.Errorf("ParseConfig(%q) = %s, %v; want %s", cfg, c.Events.Mask, err, want)
		}
	}
	for _, cfg := range []string{"events: [NoSuchEvent]", "evnts: all", "events: {a: b}"} {
		if _, err := ParseConfig(cfg); err == nil {
			t.Errorf("ParseConfig(%q) succeeded", cfg)
		}
	}
}
