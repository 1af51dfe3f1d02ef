package pipeline

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	uapi "github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/internal/testbin"
	"github.com/nrikit/nrikit/interop/internal/upstreamrt"
)

// hangGuard bounds every wait; it only fires when something hangs.
const hangGuard = 60 * time.Second

// bins are the test plugins by import path, built once in TestMain.
var bins map[string]string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "interop-pipeline-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err = testbin.Build(dir, testbin.Race, testbin.UpstreamPlugin, testbin.NrikitPlugin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	uadapt.SetPluginRegistrationTimeout(20 * time.Second)
	uadapt.SetPluginRequestTimeout(20 * time.Second)
	return m.Run()
}

// plugin is one pre-installed plugin of a pipeline.
type plugin struct {
	full, bin, mode string
}

// install writes the plugins into a new plugin directory.
func install(t *testing.T, plugins []plugin) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range plugins {
		if err := testbin.Install(dir, p.full, bins[p.bin], "-mode", p.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func request() *api.CreateContainerRequest {
	return &api.CreateContainerRequest{Pod: fixture.Pod(), Container: fixture.Container(api.ContainerState_CONTAINER_UNKNOWN)}
}

// nrikitCreate runs CreateContainer through nrikit's runtime with the
// plugins of dir.
func nrikitCreate(t *testing.T, dir string, plugins int) (*api.CreateContainerResponse, error) {
	t.Helper()
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return []*api.PodSandbox{fixture.ExistingPod()}, []*api.Container{fixture.ExistingContainer(fixture.OtherCtrID)}, nil
	}
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("interop-nrikit", "v0.0.0", list, update,
		adaptation.WithPluginDir(dir), adaptation.WithConfigDir(t.TempDir()), adaptation.WithDisabledExternalConnections(),
		adaptation.WithRegistrationTimeout(20*time.Second), adaptation.WithRequestTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("nrikit Start: %v", err)
	}
	defer a.Stop(ctx)
	if n := len(a.Plugins()); n != plugins {
		t.Fatalf("nrikit's runtime has %d plugins, want %d: %+v", n, plugins, a.Plugins())
	}
	return a.CreateContainer(ctx, request())
}

// upstreamCreate runs CreateContainer through upstream's runtime with
// the plugins of dir.
func upstreamCreate(t *testing.T, dir string) (*api.CreateContainerResponse, error) {
	t.Helper()
	sync := func(ctx context.Context, cb uadapt.SyncCB) error {
		state := &api.SynchronizeRequest{Pods: []*api.PodSandbox{fixture.ExistingPod()}, Containers: []*api.Container{fixture.ExistingContainer(fixture.OtherCtrID)}}
		u := &uapi.SynchronizeRequest{}
		if err := convert(state, u); err != nil {
			return err
		}
		_, err := cb(ctx, u.Pods, u.Containers)
		return err
	}
	update := func(context.Context, []*uapi.ContainerUpdate) ([]*uapi.ContainerUpdate, error) { return nil, nil }
	r, err := uadapt.New("containerd", "v2.2.1", sync, update,
		uadapt.WithPluginPath(dir), uadapt.WithPluginConfigPath(t.TempDir()), uadapt.WithDisabledExternalConnections())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatalf("upstream Start: %v", err)
	}
	defer r.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	return upstreamrt.Events{Adaptation: r}.CreateContainer(ctx, request())
}

// TestMixedPipeline runs the four plugins of fixture.PipelinePart, two of
// each stub, under both runtimes: the merged adjustments and updates must
// be equal field by field, and contain every plugin's part.
func TestMixedPipeline(t *testing.T) {
	dir := install(t, []plugin{
		{"10-upstream-one", testbin.UpstreamPlugin, string(behavior.PartPrefix) + "1"},
		{"20-nrikit-two", testbin.NrikitPlugin, string(behavior.PartPrefix) + "2"},
		{"30-upstream-three", testbin.UpstreamPlugin, string(behavior.PartPrefix) + "3"},
		{"40-nrikit-four", testbin.NrikitPlugin, string(behavior.PartPrefix) + "4"},
	})
	ours, err := nrikitCreate(t, dir, fixture.PipelineParts)
	if err != nil {
		t.Fatalf("nrikit CreateContainer: %v", err)
	}
	theirs, err := upstreamCreate(t, dir)
	if err != nil {
		t.Fatalf("upstream CreateContainer: %v", err)
	}
	lifecycle.ExpectEqual(t, "merged CreateContainer response, upstream's (want) vs nrikit's (got)", theirs, ours)

	adj := ours.GetAdjust()
	checks := []struct {
		what string
		ok   bool
	}{
		{"part 1 annotation", adj.GetAnnotations()["pipeline.example.com/one"] == "1"},
		{"part 2 mount", hasMount(adj, "/pipeline")},
		{"part 2 removal of /scratch", hasMount(adj, api.MarkForRemoval("/scratch"))},
		{"part 3 device", len(adj.GetLinux().GetDevices()) == 1},
		{"part 4 CDI device", len(adj.GetCDIDevices()) == 1},
		{"updates of parts 1 and 3 merged into one", len(ours.GetUpdate()) == 1 &&
			ours.Update[0].GetLinux().GetResources().GetMemory().GetLimit() != nil &&
			ours.Update[0].GetLinux().GetResources().GetCpu().GetShares() != nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("merged result lacks the %s:\n%v", c.what, ours)
		}
	}
}

func hasMount(adj *api.ContainerAdjustment, dest string) bool {
	for _, m := range adj.GetMounts() {
		if m.GetDestination() == dest {
			return true
		}
	}
	return false
}

// TestMixedConflict has an upstream-stub and a nrikit-stub plugin set
// the same memory limit: both runtimes fail the creation, naming both.
func TestMixedConflict(t *testing.T) {
	const one, two = "10-upstream-conflict", "20-nrikit-conflict"
	dir := install(t, []plugin{
		{one, testbin.UpstreamPlugin, string(behavior.ConflictPrefix) + "1"},
		{two, testbin.NrikitPlugin, string(behavior.ConflictPrefix) + "2"},
	})
	_, oursErr := nrikitCreate(t, dir, 2)
	_, theirsErr := upstreamCreate(t, dir)
	for _, c := range []struct {
		runtime string
		err     error
	}{{"nrikit", oursErr}, {"upstream", theirsErr}} {
		switch {
		case c.err == nil:
			t.Errorf("%s's runtime merged conflicting adjustments", c.runtime)
		case !strings.Contains(c.err.Error(), one) || !strings.Contains(c.err.Error(), two):
			t.Errorf("%s's conflict error %q does not name both %s and %s", c.runtime, c.err, one, two)
		default:
			t.Logf("%s: %v", c.runtime, c.err)
		}
	}
}
