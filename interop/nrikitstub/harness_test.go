package nrikitstub

import (
	"context"
	"testing"
	"time"

	uadapt "github.com/containerd/nri/pkg/adaptation"
	uapi "github.com/containerd/nri/pkg/api"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/harness"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/internal/protodiff"
	"github.com/nrikit/nrikit/interop/internal/record"
	"github.com/nrikit/nrikit/interop/internal/testbin"
	"github.com/nrikit/nrikit/interop/internal/upstreamrt"
)

// hangGuard bounds every wait; it only fires when something hangs.
const hangGuard = 60 * time.Second

// runtime is upstream's runtime with the state a test gives it and the
// updates it receives, in nrikit's types.
type runtime struct {
	*uadapt.Adaptation
	*harness.State               // Updates: Synchronize answers and unsolicited updates
	synced         chan struct{} // one per plugin synchronization
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
	r := &runtime{State: harness.NewState(t), synced: make(chan struct{}, 16)}
	a, err := uadapt.New(name, version, r.sync, r.update,
		uadapt.WithPluginPath(r.Dir), uadapt.WithPluginConfigPath(t.TempDir()), uadapt.WithSocketPath(r.Socket))
	if err != nil {
		t.Fatalf("upstream adaptation.New: %v", err)
	}
	r.Adaptation = a
	return r
}

func (r *runtime) sync(ctx context.Context, cb uadapt.SyncCB) error {
	pods, ctrs := r.List()
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
		r.T.Errorf("converting updates: %v", err)
		return
	}
	r.Push(ours.Update)
}

// start starts the runtime, which launches and synchronizes the
// pre-installed plugins before it returns, and stops it at the end of the
// test.
func (r *runtime) start() {
	r.T.Helper()
	if err := r.Start(); err != nil {
		r.T.Fatalf("Start: %v", err)
	}
	r.T.Cleanup(r.Stop)
	<-r.synced // the pre-installed plugins are synchronized together
}

func (r *runtime) external(idx, name string, args ...string) *testbin.Proc {
	r.T.Helper()
	full := api.FullPluginName(idx, name)
	args = append([]string{"-record", r.RecordFile(full), "-socket", r.Socket, "-idx", idx, "-name", name}, args...)
	return testbin.Start(r.T, pluginBin, args...)
}

// awaitSynced waits until an external plugin is synchronized and in the
// runtime's list of plugins (which upstream's runtime adds it to after the
// synchronization, before it releases the synchronization lock).
func (r *runtime) awaitSynced(proc *testbin.Proc) {
	r.T.Helper()
	select {
	case <-r.synced:
	case <-time.After(hangGuard):
		r.T.Fatalf("plugin not synchronized within %v:\n%s", hangGuard, proc.Output())
	}
	r.BlockPluginSync().Unblock()
}

func (r *runtime) awaitUpdates(n int) [][]*api.ContainerUpdate {
	r.T.Helper()
	var out [][]*api.ContainerUpdate
	timeout := time.After(hangGuard)
	for len(out) < n {
		select {
		case u := <-r.Updates:
			out = append(out, u)
		case <-timeout:
			r.T.Fatalf("got %d updates within %v, want %d", len(out), hangGuard, n)
		}
	}
	return out
}

func (r *runtime) recordsOf(fullName string) []record.Record {
	r.T.Helper()
	recs, err := record.Read(r.RecordFile(fullName))
	if err != nil {
		r.T.Fatal(err)
	}
	return recs
}

// drive runs the fixture pod and container through every event
// (lifecycle.Drive) on the runtime, bounded by hangGuard.
func (r *runtime) drive() *lifecycle.Results {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := lifecycle.Drive(ctx, upstreamrt.Events{Adaptation: r.Adaptation})
	if err != nil {
		r.T.Fatalf("driving the container's lifecycle: %v", err)
	}
	return res
}
