package differ

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func TestDiff(t *testing.T) {
	before := &api.Container{Name: "c", State: api.ContainerState_CONTAINER_UNKNOWN, Env: []string{"A=1", "B=2"},
		Mounts: []*api.Mount{{Destination: "/d", Source: "/s"}}}
	after := &api.Container{Name: "c", State: api.ContainerState_CONTAINER_CREATED, Pid: 5, Env: []string{"A=1", "B=3", "C=4"},
		Linux: &api.LinuxContainer{Devices: []*api.LinuxDevice{{Path: "/dev/x", Type: "c"}}}}
	got := Diff(before, after)
	want := []Change{
		change("env[B]", ocispec.Modified, "2", "3"),
		change("env[C]", ocispec.Added, "", "4"),
		change("linux.devices[/dev/x]", ocispec.Added, "", "type=c"),
		change("mounts[/d]", ocispec.Removed, "source=/s", ""),
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
	if c := reported["PostCreateContainer ns/web/nginx"]; len(c) != 1 || c[0] != change("env[INJECTED]", ocispec.Added, "", "yes") {
		t.Errorf("creation: %v", c)
	}
	if c := reported["PostUpdateContainer ns/web/nginx"]; len(c) != 1 || c[0] != change("linux.resources.memory.limit", ocispec.Modified, "100", "200") {
		t.Errorf("update: %v", c)
	}
}

// change returns the differ's Change of path.
func change(path string, kind ocispec.ChangeKind, old, new string) Change {
	return Change{Change: ocispec.Change{Path: path, Kind: kind, Old: old, New: new}}
}

func i64(v int64) *api.OptionalInt64   { return &api.OptionalInt64{Value: v} }
func u64(v uint64) *api.OptionalUInt64 { return &api.OptionalUInt64{Value: v} }
func paths(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, c.String())
	}
	return out
}

// TestDiffUnset checks that a field absent in one view and empty or zero
// in the other is no change (containerd's normalisation on create: hooks
// {} -> (none), linux.resources.cpu {} -> (none)), while list and map
// entries with such values are.
func TestDiffUnset(t *testing.T) {
	before := &api.Container{Name: "c", Hooks: &api.Hooks{}, Env: []string{"ZERO=0"},
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{}, Memory: &api.LinuxMemory{Swap: i64(0)}}}}
	after := &api.Container{Name: "c", Annotations: map[string]string{"a": "0"},
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Period: u64(0)}}}}
	got := paths(Diff(before, after))
	want := []string{"annotations[a]: (none) -> 0", "env[ZERO]: 0 -> (none)"}
	if !slices.Equal(got, want) {
		t.Errorf("Diff = %q, want %q", got, want)
	}
	// A real value against none is still a change.
	after.Linux.Resources.Cpu.Period = u64(100000)
	if got := paths(Diff(before, after)); !slices.Contains(got, "linux.resources.cpu.period: (none) -> 100000") {
		t.Errorf("Diff = %q, want the period", got)
	}
}

// containerdUpdate replays, over stubtest's runtime, what containerd
// v2.4.2 sends the differ around a creation and a `crictl update
// --memory 268435456` that no plugin adjusts (issue 14): on create it
// reports empty hooks and resources it was not sent; the update asks for
// a zero cpu.period and no devices, and the updated container has no
// period, its default device rule "deny all" (devices[0], access=rwm)
// and the swap limit set to the memory limit.
func containerdUpdate(t *testing.T, runtime string) (map[string][]Change, string) {
	t.Helper()
	var mu sync.Mutex
	reported := map[string][]Change{}
	var logs bytes.Buffer
	p := New(slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil)), func(event, _ string, changes []Change) {
		mu.Lock()
		defer mu.Unlock()
		reported[event] = changes
	})
	rt := stubtest.NewRuntime(t, stubtest.WithRuntime(runtime, "v2.4.2"))
	_, tp := rt.StartPlugin(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pod := &api.PodSandbox{Id: "p", Name: "pod", Namespace: "upd"}
	deny := []*api.LinuxDeviceCgroup{{Access: "rwm"}}
	proposed := &api.Container{Id: "c", PodSandboxId: "p", Name: "app", Hooks: &api.Hooks{},
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: u64(2)}, Memory: &api.LinuxMemory{}, Devices: deny}}}
	if _, err := tp.CreateContainer(ctx, pod, proposed); err != nil {
		t.Fatal(err)
	}
	created := &api.Container{Id: "c", PodSandboxId: "p", Name: "app", State: api.ContainerState_CONTAINER_CREATED,
		Linux: &api.LinuxContainer{Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: u64(2)}, Devices: deny}}}
	if _, err := tp.Client().PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: created}); err != nil {
		t.Fatal(err)
	}
	asked := &api.LinuxResources{Cpu: &api.LinuxCPU{Period: u64(0), Shares: u64(2)}, Memory: &api.LinuxMemory{Limit: i64(268435456)}}
	if _, err := tp.Client().UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: created, LinuxResources: asked}); err != nil {
		t.Fatal(err)
	}
	updated := api.Clone(created)
	updated.Linux.Resources.Memory = &api.LinuxMemory{Limit: i64(268435456), Swap: i64(268435456)}
	if _, err := tp.Client().PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: updated}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return reported, logs.String()
}

type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// TestContainerdNormalisation checks that on containerd the differ
// reports none of containerd's normalisation as a plugin's change, and
// the swap limit containerd sets as the runtime's, separately.
func TestContainerdNormalisation(t *testing.T) {
	reported, log := containerdUpdate(t, "containerd")
	if c := reported["PostCreateContainer"]; len(c) != 0 {
		t.Errorf("creation: %q, want no changes", paths(c))
	}
	want := change("linux.resources.memory.swap", ocispec.Added, "", "268435456")
	want.Runtime = "containerd sets the swap limit to the memory limit when none is asked for"
	if c := reported["PostUpdateContainer"]; len(c) != 1 || c[0] != want {
		t.Errorf("update: %q, want only %q", paths(c), want)
	}
	for _, line := range []string{
		`msg="reporting the changes of all plugins, at any index (containerd shows every plugin the container as it proposed it)" runtime="containerd v2.4.2"`,
		`msg="PostCreateContainer: no changes by plugins" container=upd/pod/app`,
		`msg="PostUpdateContainer: no changes by plugins" container=upd/pod/app`,
		`msg="PostUpdateContainer: the runtime changed the container" container=upd/pod/app changes=1 runtime=containerd`,
		`msg="  linux.resources.memory.swap: (none) -> 268435456 (containerd sets the swap limit to the memory limit when none is asked for)"`,
	} {
		if !strings.Contains(log, line) {
			t.Errorf("log lacks %s:\n%s", line, log)
		}
	}
	if strings.Contains(log, "plugins changed") {
		t.Errorf("log blames plugins:\n%s", log)
	}
}

// TestAttribution checks whose changes the differ says it reports, by
// runtime: on nrikit's runtime the plugins after it; on a runtime it does
// not know it says so, and takes no change for the runtime's own.
func TestAttribution(t *testing.T) {
	for runtime, want := range map[string]string{
		"nri-simulator": "the plugins after the differ, by index (nri-simulator shows each plugin the container as changed by the plugins before it)",
		"CRI-O":         "all plugins, at any index (CRI-O shows every plugin the container as it proposed it)",
		"other":         "plugins (runtime other: not known whether it shows plugins the proposed container or the one changed by the plugins before them)",
	} {
		if got := RuntimeNamed(runtime).Attribution(); got != want {
			t.Errorf("%s: %q, want %q", runtime, got, want)
		}
	}
	reported, log := containerdUpdate(t, "other")
	if c := reported["PostUpdateContainer"]; len(c) != 1 || c[0].Runtime != "" {
		t.Errorf("update on an unknown runtime: %q, want the swap limit as a plugins' change", paths(c))
	}
	if !strings.Contains(log, `msg="PostUpdateContainer: plugins changed the container" container=upd/pod/app changes=1 by="plugins (runtime other: not known`) {
		t.Errorf("log:\n%s", log)
	}
}
