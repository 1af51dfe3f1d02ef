package gpuenv

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/plugins/internal/allow"
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

// configured returns the plugin with env, configured with config.
func configured(t *testing.T, env map[string]string, config string, log *bytes.Buffer) *Plugin {
	t.Helper()
	p := New(slog.New(slog.NewTextHandler(log, nil)), env)
	if _, err := p.Configure(context.Background(), config, "rt", "1"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCreateContainer(t *testing.T) {
	var log bytes.Buffer
	p := configured(t, nil, "visibleDevices: ['[0-3]']\n", &log)
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
	if got := envOf(adj); got[VisibleDevicesEnv] != "void" {
		t.Errorf("container b: %v, want the default void", got)
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
	var log bytes.Buffer
	c := configured(t, map[string]string{VisibleDevicesEnv: "all", "X": "1"}, "visibleDevices: [all, '0']", &log)
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
	for _, bad := range []string{"env: [x]", "other: 1", "env: {\"A=B\": c}", "env: {NVIDIA_VISIBLE_DEVICES: all}", "visibleDevices: ['[']"} {
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
	if envOf(rsp.GetAdjust())[VisibleDevicesEnv] != "void" {
		t.Errorf("adjustment over the wire: %v", rsp.GetAdjust())
	}
}

// TestVisibleDevices: NVIDIA_VISIBLE_DEVICES names only the devices of
// visibleDevices, "all" only if listed, from the configuration (refused
// at Configure) or an annotation (the creation fails naming the
// annotation, and a warning names the pod).
func TestVisibleDevices(t *testing.T) {
	const config = "visibleDevices: ['[0-3]', 'GPU-*']\n"
	for name, tc := range map[string]struct{ config, value, want string }{
		"one":              {config, "0", ""},
		"several":          {config, "0,1, 3", ""},
		"a UUID":           {config, "GPU-8f2b3c", ""},
		"none":             {"", "none", ""},
		"void":             {"", "void", ""},
		"all listed":       {"visibleDevices: [all]", "all", ""},
		"all":              {config, "all", `"all" is not allowed`},
		"all, no config":   {"", "all", `"all" is not allowed`},
		"glob is not all":  {"visibleDevices: ['*']", "all", `"all" is not allowed`},
		"not listed":       {config, "0,4", `device "4" is not in the plugin's visibleDevices`},
		"no configuration": {"", "0", `device "0" is not in`},
		"too long":         {"visibleDevices: ['*']", strings.Repeat("0", MaxVisibleDevicesLen+1), "longer than 1024 bytes"},
		"too many":         {"visibleDevices: ['*']", strings.Repeat("0,", MaxVisibleDevices) + "0", "more than 64 devices"},
	} {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			p := configured(t, nil, tc.config, &log)
			pod := &api.PodSandbox{Name: "train", Namespace: "ml", Annotations: map[string]string{VisibleDevicesAnnotation + "/pod": tc.value}}
			adj, _, err := p.CreateContainer(context.Background(), pod, &api.Container{Name: "c"})
			if tc.want == "" {
				if err != nil || envOf(adj)[VisibleDevicesEnv] != tc.value {
					t.Errorf("adjustment %v, error %v", adj, err)
				}
				return
			}
			var r *allow.Refusal
			if adj != nil || !errors.As(err, &r) || r.Annotation != VisibleDevicesAnnotation+"/pod" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("adjustment %v, error %v: want a refusal with %q", adj, err, tc.want)
			}
			for _, s := range []string{"level=WARN", "pod=ml/train", "annotation=" + VisibleDevicesAnnotation + "/pod", "value="} {
				if !strings.Contains(log.String(), s) {
					t.Errorf("the warning lacks %q:\n%s", s, log.String())
				}
			}
		})
	}
	// From the configuration or -env: Configure fails.
	for name, tc := range map[string]struct {
		env    map[string]string
		config string
	}{
		"env: all":        {nil, "env: {NVIDIA_VISIBLE_DEVICES: all}"},
		"env: not listed": {nil, "env: {NVIDIA_VISIBLE_DEVICES: '7'}\nvisibleDevices: ['[0-3]']"},
		"-env all":        {map[string]string{VisibleDevicesEnv: "all"}, ""},
		"-env, other":     {map[string]string{VisibleDevicesEnv: "all"}, "visibleDevices: ['0']"},
	} {
		p := New(slog.New(slog.DiscardHandler), tc.env)
		if _, err := p.Configure(context.Background(), tc.config, "rt", "1"); err == nil || !strings.Contains(err.Error(), "invalid gpu-env configuration") {
			t.Errorf("%s: Configure error %v", name, err)
		}
	}
	p := New(slog.New(slog.DiscardHandler), map[string]string{VisibleDevicesEnv: "all"})
	if _, err := p.Configure(context.Background(), "visibleDevices: [all]", "rt", "1"); err != nil {
		t.Errorf("-env all with visibleDevices: [all]: %v", err)
	}
}

// TestNamespaces: pods outside the configured namespaces get nothing.
func TestNamespaces(t *testing.T) {
	var log bytes.Buffer
	p := configured(t, nil, "namespaces: [ml]\n", &log)
	for ns, want := range map[string]bool{"ml": true, "default": false} {
		adj, _, err := p.CreateContainer(context.Background(), &api.PodSandbox{Namespace: ns}, &api.Container{Name: "c"})
		if err != nil || (adj != nil) != want {
			t.Errorf("namespace %s: %v, %v; want an adjustment: %v", ns, adj, err, want)
		}
	}
}
