package differ

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func TestDiff(t *testing.T) {
	before := &api.Container{Name: "c", State: api.ContainerState_CONTAINER_UNKNOWN, Env: []string{"A=1", "B=2"},
		Mounts: []*api.Mount{{Destination: "/d", Source: "/s"}}}
	after := &api.Container{Name: "c", State: api.ContainerState_CONTAINER_CREATED, Pid: 5, Env: []string{"A=1", "B=3", "C=4"},
		Linux: &api.LinuxContainer{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "c"}}}}
	got := Diff(before, after)
	want := []Change{
		{Path: "env[B]", Old: "2", New: "3"},
		{Path: "env[C]", New: "4"},
		{Path: "linux.devices[/dev/x]", New: "type=c"},
		{Path: "mounts[/d]", Old: "source=/s"},
	}
	if len(got) != len(want) {
		t.Fatalf("Diff = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %v, want %v", i, got[i], want[i])
		}
	}
	if s := want[1].String(); s != "env[C]: (none) -> 4" {
		t.Errorf("String() = %q", s)
	}
}

// TestReportsChanges sends the plugin the events a runtime sends around a
// creation and an update, over stubtest's runtime.
func TestReportsChanges(t *testing.T) {
	var mu sync.Mutex
	reported := map[string][]Change{}
	p := New(slog.New(slog.DiscardHandler), func(event, container string, changes []Change) {
		mu.Lock()
		defer mu.Unlock()
		reported[event+" "+container] = changes
	})
	rt := stubtest.NewRuntime(t)
	_, tp := rt.StartPlugin(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := &api.PodSandbox{Id: "p", Name: "web", Namespace: "ns"}
	ctr := &api.Container{Id: "c", Name: "nginx", Env: []string{"A=1"}}
	if _, err := tp.CreateContainer(ctx, pod, ctr); err != nil {
		t.Fatal(err)
	}
	created := api.Clone(ctr)
	created.Env = append(created.Env, "INJECTED=yes")
	created.State = api.ContainerState_CONTAINER_CREATED
	if _, err := tp.Client().PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: created}); err != nil {
		t.Fatal(err)
	}
	asked := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 100}}}
	if _, err := tp.Client().UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: created, LinuxResources: asked}); err != nil {
		t.Fatal(err)
	}
	updated := api.Clone(created)
	updated.Linux = &api.LinuxContainer{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: 200}}}}
	if _, err := tp.Client().PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: updated}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if c := reported["PostCreateContainer ns/web/nginx"]; len(c) != 1 || c[0] != (Change{Path: "env[INJECTED]", New: "yes"}) {
		t.Errorf("creation: %v", c)
	}
	if c := reported["PostUpdateContainer ns/web/nginx"]; len(c) != 1 || c[0] != (Change{Path: "linux.resources.memory.limit", Old: "100", New: "200"}) {
		t.Errorf("update: %v", c)
	}
}
