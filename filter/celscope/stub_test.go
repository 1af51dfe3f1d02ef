package celscope_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// podsSeen records the pods and containers a plugin's handlers saw.
type podsSeen struct {
	mu   sync.Mutex
	seen []string
}

func (s *podsSeen) saw(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, what)
}

func (s *podsSeen) RunPodSandbox(_ context.Context, p *api.PodSandbox) error {
	s.saw("pod " + p.GetId())
	return nil
}

func (s *podsSeen) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	s.saw("container " + c.GetId())
	return nil, nil, nil
}

// TestStubEnforcesCEL: a plugin's stub given celscope.Compile enforces
// the CEL expression of its scope on a runtime that does not evaluate
// scopes (stubtest's, as containerd and CRI-O): its handlers see only the
// pods and containers the expression selects. (The stub's own tests use a
// stand-in compiler, so that they do not import cel-go.)
func TestStubEnforcesCEL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt := stubtest.NewRuntime(t)
	conn, err := rt.Connect()
	if err != nil {
		t.Fatal(err)
	}
	plugin := &podsSeen{}
	s, err := stub.New(plugin, stub.WithPluginIdx("10"), stub.WithPluginName("cel"), stub.WithConnection(conn),
		stub.WithScope(&api.PluginScope{Cel: `pod.labels[?"accel"].orValue("") == "gpu" && container.name == "main"`}),
		stub.WithCEL(celscope.Compile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.NextPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if err := p.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	gpu := &api.PodSandbox{Id: "gpu", Labels: map[string]string{"accel": "gpu"}}
	cpu := &api.PodSandbox{Id: "cpu"}
	for _, pod := range []*api.PodSandbox{gpu, cpu} {
		if _, err := p.RunPodSandbox(ctx, pod); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"main", "side"} {
			ctr := &api.Container{Id: pod.Id + "-" + name, PodSandboxId: pod.Id, Name: name}
			if _, err := p.CreateContainer(ctx, pod, ctr); err != nil {
				t.Fatal(err)
			}
		}
	}
	plugin.mu.Lock()
	got := plugin.seen
	plugin.mu.Unlock()
	if want := []string{"pod gpu", "container gpu-main"}; !slices.Equal(got, want) {
		t.Errorf("handlers saw %q, want %q", got, want)
	}
}
