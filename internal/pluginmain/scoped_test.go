package pluginmain

import (
	"context"
	"errors"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

// recorder handles CreateContainer, StopContainer and Synchronize and
// records what it was given.
type recorder struct {
	created []string
	stopped []string
	synced  []string
}

func (r *recorder) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	r.created = append(r.created, c.GetName())
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("SEEN", "1")
	return adj, nil, nil
}

func (r *recorder) StopContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	r.stopped = append(r.stopped, c.GetName())
	return nil, nil
}

func (r *recorder) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, p := range pods {
		r.synced = append(r.synced, p.GetName())
	}
	for _, c := range ctrs {
		r.synced = append(r.synced, c.GetName())
	}
	return nil, nil
}

func TestScoped(t *testing.T) {
	inner := &recorder{}
	s, events, err := newScoped(inner, &api.PluginScope{PodLabelSelector: "accel=gpu", ContainerNames: []string{"main"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_STOP_CONTAINER); events != want {
		t.Errorf("events %s, want %s", events, want)
	}
	ctx := context.Background()
	gpu := &api.PodSandbox{Id: "g", Name: "gpu", Labels: map[string]string{"accel": "gpu"}}
	cpu := &api.PodSandbox{Id: "c", Name: "cpu"}
	main, side := &api.Container{Name: "main", PodSandboxId: "g"}, &api.Container{Name: "side", PodSandboxId: "g"}

	if adj, _, err := s.CreateContainer(ctx, gpu, main); err != nil || len(adj.GetEnv()) != 1 {
		t.Errorf("in scope: %v, %v", adj, err)
	}
	if adj, _, err := s.CreateContainer(ctx, cpu, &api.Container{Name: "main"}); adj != nil || !errors.Is(err, stub.ErrNotInterestedInPod) {
		t.Errorf("pod out of scope: %v, %v", adj, err)
	}
	if adj, _, err := s.CreateContainer(ctx, gpu, side); adj != nil || !errors.Is(err, stub.ErrNotInterestedInContainer) {
		t.Errorf("container out of scope: %v, %v", adj, err)
	}
	if _, err := s.StopContainer(ctx, cpu, main); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StopContainer(ctx, gpu, main); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Synchronize(ctx, []*api.PodSandbox{gpu, cpu}, []*api.Container{main, side, {Name: "main", PodSandboxId: "c"}}); err != nil {
		t.Fatal(err)
	}
	if len(inner.created) != 1 || len(inner.stopped) != 1 {
		t.Errorf("created %v, stopped %v", inner.created, inner.stopped)
	}
	if got := inner.synced; len(got) != 2 || got[0] != "gpu" || got[1] != "main" {
		t.Errorf("synchronized %v", got)
	}
	if _, _, err := newScoped(inner, &api.PluginScope{PodLabelSelector: "a in ("}); err == nil {
		t.Error("invalid scope accepted")
	}
	if _, _, err := newScoped(struct{}{}, &api.PluginScope{}); err == nil {
		t.Error("plugin without handlers accepted")
	}
}
