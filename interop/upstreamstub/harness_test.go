package upstreamstub

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/record"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// hangGuard bounds every wait; it only fires when something hangs.
const hangGuard = 60 * time.Second

// runtime is nrikit's runtime with the state a test gives it and the
// updates it receives.
type runtime struct {
	*adaptation.Adaptation
	t       testing.TB
	socket  string
	dir     string // pre-installed plugins
	records string // record files

	mu      sync.Mutex
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	updates chan []*api.ContainerUpdate
}

// newRuntime returns an unstarted runtime whose ListFunc reports the
// existing fixture pod and containers.
func newRuntime(t testing.TB, opts ...adaptation.Option) *runtime {
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
		updates: make(chan []*api.ContainerUpdate, 16),
	}
	all := append([]adaptation.Option{
		adaptation.WithPluginDir(r.dir),
		adaptation.WithConfigDir(t.TempDir()),
		adaptation.WithSocketPath(r.socket),
		adaptation.WithRegistrationTimeout(20 * time.Second),
		adaptation.WithRequestTimeout(20 * time.Second),
		adaptation.WithSynchronizeTimeout(30 * time.Second),
		adaptation.WithTerminationGrace(5 * time.Second),
	}, opts...)
	a, err := adaptation.New("interop-nrikit", "v0.0.0", r.list, r.update, all...)
	if err != nil {
		t.Fatalf("adaptation.New: %v", err)
	}
	r.Adaptation = a
	return r
}

func (r *runtime) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods, r.ctrs, nil
}

func (r *runtime) update(_ context.Context, u []*api.ContainerUpdate, _ []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	select {
	case r.updates <- api.Clone(&api.UpdateContainersRequest{Update: u}).Update:
	default:
		r.t.Errorf("too many unsolicited updates")
	}
	return nil, nil
}

// setState replaces what ListFunc reports; call it before Start.
func (r *runtime) setState(pods []*api.PodSandbox, ctrs []*api.Container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods, r.ctrs = pods, ctrs
}

// recordFile returns the record file of the plugin fullName.
func (r *runtime) recordFile(fullName string) string {
	return filepath.Join(r.records, fullName+".jsonl")
}

// install puts the test plugin into the plugin directory as fullName.
func (r *runtime) install(fullName string, args ...string) {
	r.t.Helper()
	args = append([]string{"-record", r.recordFile(fullName)}, args...)
	if err := testbin.Install(r.dir, fullName, pluginBin, args...); err != nil {
		r.t.Fatal(err)
	}
}

// start starts the runtime and stops it at the end of the test.
func (r *runtime) start() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.t.Cleanup(func() { r.stop() })
}

// stop stops the runtime (again).
func (r *runtime) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		r.t.Errorf("Stop: %v", err)
	}
}

// external starts the test plugin as the external plugin idx-name.
func (r *runtime) external(idx, name string, args ...string) *testbin.Proc {
	r.t.Helper()
	full := api.FullPluginName(idx, name)
	args = append([]string{"-record", r.recordFile(full), "-socket", r.socket, "-idx", idx, "-name", name}, args...)
	return testbin.Start(r.t, pluginBin, args...)
}

// awaitActive waits until the external plugin fullName, running as proc,
// is active. The runtime offers no notification, so this polls Plugins.
func (r *runtime) awaitActive(fullName string, proc *testbin.Proc) adaptation.PluginInfo {
	r.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, p := range r.Plugins() {
			if p.FullName() == fullName && p.State == adaptation.StateActive {
				return p
			}
		}
		if proc.Wait(10 * time.Millisecond) {
			r.t.Fatalf("plugin %s exited before it was active: %v\n%s", fullName, proc.Err(), proc.Output())
		}
	}
	r.t.Fatalf("plugin %s not active within %v; plugins: %+v", fullName, hangGuard, r.Plugins())
	return adaptation.PluginInfo{}
}

// plugin returns the info of the plugin fullName, failing if absent.
func (r *runtime) plugin(fullName string) adaptation.PluginInfo {
	r.t.Helper()
	for _, p := range r.Plugins() {
		if p.FullName() == fullName {
			return p
		}
	}
	r.t.Fatalf("plugin %s not registered; plugins: %+v", fullName, r.Plugins())
	return adaptation.PluginInfo{}
}

// awaitUpdates waits for n calls of the UpdateFunc and returns them.
func (r *runtime) awaitUpdates(n int) [][]*api.ContainerUpdate {
	r.t.Helper()
	var out [][]*api.ContainerUpdate
	timeout := time.After(hangGuard)
	for len(out) < n {
		select {
		case u := <-r.updates:
			out = append(out, u)
		case <-timeout:
			r.t.Fatalf("got %d UpdateFunc calls within %v, want %d", len(out), hangGuard, n)
		}
	}
	return out
}

// records reads the records of the plugin fullName.
func (r *runtime) recordsOf(fullName string) []record.Record {
	r.t.Helper()
	recs, err := record.Read(r.recordFile(fullName))
	if err != nil {
		r.t.Fatal(err)
	}
	return recs
}

// events adapts the runtime to lifecycle.Runtime.
type events struct{ *adaptation.Adaptation }

func (e events) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) error {
	_, err := e.Adaptation.UpdatePodSandbox(ctx, req)
	return err
}
