package gpuenv

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func envOf(adj *api.ContainerAdjustment) map[string]string {
	out := map[string]string{}
	for _, kv := range adj.GetEnv() {
		out[kv.GetKey()] = kv.GetValue()
	}
	return out
}

func TestCreateContainer(t *testing.T) {
	p := New(slog.New(slog.DiscardHandler), nil)
	ctx := context.Background()
	pod := &api.PodSandbox{Name: "train", Namespace: "ml", Annotations: map[string]string{
		VisibleDevicesAnnotation + "/container.a": "0,1",
	}}
	adj, upd, err := p.CreateContainer(ctx, pod, &api.Container{Name: "a"})
	if err != nil || len(upd) != 0 {
		t.Fatal(err, upd)
	}
	if got := envOf(adj); got[VisibleDevicesEnv] != "0,1" || got["NVIDIA_DRIVER_CAPABILITIES"] != "compute,utility" || len(got) != 2 {
		t.Errorf("container a: %v", got)
	}
	adj, _, _ = p.CreateContainer(ctx, pod, &api.Container{Name: "b"})
	if got := envOf(adj); got[VisibleDevicesEnv] != "all" {
		t.Errorf("container b: %v", got)
	}
	// Sorted, so that the adjustment is deterministic.
	if env := adj.GetEnv(); env[0].GetKey() != "NVIDIA_DRIVER_CAPABILITIES" {
		t.Errorf("order: %v", env)
	}
}

// TestAnnotationOnlyOverrides checks that the visible-devices annotation
// overrides NVIDIA_VISIBLE_DEVICES only in an instance that sets it: two
// instances with their own variables (-env, or a configuration without
// it) answer for a pod with the annotation without conflicting over it.
func TestAnnotationOnlyOverrides(t *testing.T) {
	ctx := context.Background()
	pod := &api.PodSandbox{Name: "train", Namespace: "ml", Annotations: map[string]string{VisibleDevicesAnnotation + "/pod": "0"}}
	a := New(slog.New(slog.DiscardHandler), map[string]string{"GPU_A": "1"})
	b := New(slog.New(slog.DiscardHandler), nil)
	if _, err := b.Configure(ctx, "env: {GPU_B: \"1\"}", "containerd", "v2.4.2"); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Plugin{"-env GPU_A=1": a, "env: {GPU_B: 1}": b} {
		adj, _, err := p.CreateContainer(ctx, pod, &api.Container{Name: "app"})
		if err != nil {
			t.Fatal(err)
		}
		if got := envOf(adj); len(got) != 1 || got[VisibleDevicesEnv] != "" {
			t.Errorf("instance with %s sets %v, want its own variable only", name, got)
		}
	}
	// Configured with the variable, the annotation still overrides it.
	c := New(slog.New(slog.DiscardHandler), map[string]string{VisibleDevicesEnv: "all", "X": "1"})
	adj, _, _ := c.CreateContainer(ctx, pod, &api.Container{Name: "app"})
	if got := envOf(adj); got[VisibleDevicesEnv] != "0" || got["X"] != "1" {
		t.Errorf("instance setting %s: %v, want the annotation's 0", VisibleDevicesEnv, got)
	}
}

func TestConfigure(t *testing.T) {
	p := New(slog.New(slog.DiscardHandler), map[string]string{"X": "1"})
	if _, err := p.Configure(context.Background(), "env: {CUDA_VISIBLE_DEVICES: \"0\"}", "rt", "1"); err != nil {
		t.Fatal(err)
	}
	adj, _, _ := p.CreateContainer(context.Background(), &api.PodSandbox{}, &api.Container{Name: "c"})
	if got := envOf(adj); got["CUDA_VISIBLE_DEVICES"] != "0" || got["X"] != "" {
		t.Errorf("configured env: %v", got)
	}
	for _, bad := range []string{"env: [x]", "other: 1", "env: {\"A=B\": c}"} {
		if _, err := p.Configure(context.Background(), bad, "rt", "1"); err == nil {
			t.Errorf("Configure(%q) succeeded", bad)
		}
	}
}

// TestScope runs the plugin against stubtest's runtime: it registers with
// its default scope, which a nrikit runtime evaluates.
func TestScope(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	_, p := rt.StartPlugin(t, New(slog.New(slog.DiscardHandler), nil), stub.WithScope(DefaultScope()))
	if got := p.ConfigureResponse().GetScope().GetPodLabelSelector(); got != "accel=gpu" {
		t.Errorf("scope sent = %q", got)
	}
	if got := p.Events(); got != api.MaskOf(api.Event_CREATE_CONTAINER) {
		t.Errorf("subscribed to %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A pod in scope: stubtest's runtime does not evaluate scopes, so the
	// stub does.
	rsp, err := p.CreateContainer(ctx, &api.PodSandbox{Id: "p", Labels: map[string]string{"accel": "gpu"}}, &api.Container{Id: "c", Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if envOf(rsp.GetAdjust())[VisibleDevicesEnv] != "all" {
		t.Errorf("adjustment over the wire: %v", rsp.GetAdjust())
	}
}
