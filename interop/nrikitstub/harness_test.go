package nrikitstub

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	uapi "github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
	"github.com/nrikit/nrikit/interop/internal/record"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// hangGuard bounds every wait; it only fires when something hangs.
const hangGuard = 60 * time.Second

// runtime is upstream's runtime with the state a test gives it and the
// updates it receives, in nrikit's types.
type runtime struct {
	*uadapt.Adaptation
	t       testing.TB
	socket  string
	dir     string
	records string

	mu      sync.Mutex
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	synced  chan struct{}               // one per plugin synchronization
	updates chan []*api.ContainerUpdate // Synchronize answers and unsolicited updates
}

// Upstream's runtime in a test binary reports NRI version "0.0.0-unknown"
// (test binaries carry no dependency build information), so stubs infer
// the version from the runtime's name and version, as upstream's stub
// does: the tests pose as a containerd release built with NRI v0.11.
const (
	runtimeName    = "containerd"
	runtimeVersion = "v2.2.1"
)

// newRuntime returns an unstarted upstream runtime called name/version.
func newRuntime(t testing.TB, name, version string) *runtime {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "nri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	r := &runtime{
		t:       t,
		socket:  filepath.Join(sockDir, "nri.sock"),
		dir:     t.TempDir(),
		records: t.TempDir(),
		pods:    []*api.PodSandbox{fixture.ExistingPod()},
		ctrs:    []*api.Container{fixture.ExistingContainer(fixture.OtherCtrID), fixture.ExistingContainer(fixture.ThirdCtrID)},
		synced:  make(chan struct{}, 16),
		updates: make(chan []*api.ContainerUpdate, 16),
	}
	a, err := uadapt.New(name, version, r.sync, r.update,
		uadapt.WithPluginPath(r.dir), uadapt.WithPluginConfigPath(t.TempDir()), uadapt.WithSocketPath(r.socket))
	if err != nil {
		t.Fatalf("upstream adaptation.New: %v", err)
	}
	r.Adaptation = a
	return r
}

func (r *runtime) sync(ctx context.Context, cb uadapt.SyncCB) error {
	r.mu.Lock()
	pods, ctrs := r.pods, r.ctrs
	r.mu.Unlock()
	upods, err := protodiff.Convert(&api.SynchronizeRequest{Pods: pods, Containers: ctrs}, &uapi.SynchronizeRequest{})
	if err != nil {
		return err
	}
	updates, err := cb(ctx, upods.Pods, upods.Containers)
	if err != nil {
		return err
	}
	if len(updates) != 0 {
		r.push(updates)
	}
	r.synced <- struct{}{}
	return nil
}

func (r *runtime) update(_ context.Context, u []*uapi.ContainerUpdate) ([]*uapi.ContainerUpdate, error) {
	r.push(u)
	return nil, nil
}

func (r *runtime) push(u []*uapi.ContainerUpdate) {
	ours, err := protodiff.Convert(&uapi.UpdateContainersRequest{Update: u}, &api.UpdateContainersRequest{})
	if err != nil {
		r.t.Errorf("converting updates: %v", err)
		return
	}
	select {
	case r.updates <- ours.Update:
	default:
		r.t.Errorf("too many updates")
	}
}

func (r *runtime) setState(pods []*api.PodSandbox, ctrs []*api.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods, r.ctrs = pods, ctrs
}

func (r *runtime) recordFile(fullName string) string {
	return filepath.Join(r.records, fullName+".jsonl")
}

func (r *runtime) install(fullName string, args ...string) {
	r.t.Helper()
	args = append([]string{"-record", r.recordFile(fullName)}, args...)
	if err := testbin.Install(r.dir, fullName, pluginBin, args...); err != nil {
		r.t.Fatal(err)
	}
}

// start starts the runtime, which launches and synchronizes the
// pre-installed plugins before it returns, and stops it at the end of the
// test.
func (r *runtime) start() {
	r.t.Helper()
	if err := r.Start(); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.t.Cleanup(r.Stop)
	<-r.synced // the pre-installed plugins are synchronized together
}

func (r *runtime) external(idx, name string, args ...string) *testbin.Proc {
	r.t.Helper()
	full := api.FullPluginName(idx, name)
	args = append([]string{"-record", r.recordFile(full), "-socket", r.socket, "-idx", idx, "-name", name}, args...)
	return testbin.Start(r.t, pluginBin, args...)
}

// awaitSynced waits until an external plugin is synchronized and in the
// runtime's list of plugins (which upstream's runtime adds it to after the
// synchronization, before it releases the synchronization lock).
func (r *runtime) awaitSynced(proc *testbin.Proc) {
	r.t.Helper()
	select {
	case <-r.synced:
	case <-time.After(hangGuard):
		r.t.Fatalf("plugin not synchronized within %v:\n%s", hangGuard, proc.Output())
	}
	r.BlockPluginSync().Unblock()
}

func (r *runtime) awaitUpdates(n int) [][]*api.ContainerUpdate {
	r.t.Helper()
	var out [][]*api.ContainerUpdate
	timeout := time.After(hangGuard)
	for len(out) < n {
		select {
		case u := <-r.updates:
			out = append(out, u)
		case <-timeout:
			r.t.Fatalf("got %d updates within %v, want %d", len(out), hangGuard, n)
		}
	}
	return out
}

func (r *runtime) recordsOf(fullName string) []record.Record {
	r.t.Helper()
	recs, err := record.Read(r.recordFile(fullName))
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}
