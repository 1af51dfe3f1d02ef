package upstreamstub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/harness"
	"github.com/nrikit/nrikit/interop/internal/record"
	"github.com/nrikit/nrikit/interop/internal/testbin"
)

// hangGuard bounds every wait; it only fires when something hangs.
const hangGuard = 60 * time.Second

// runtime is nrikit's runtime with the state a test gives it and the
// updates it receives.
type runtime struct {
	*adaptation.Adaptation
	*harness.State
	// failUnsolicited makes the UpdateFunc fail the plugin's unsolicited
	// update as containerd fails one it could not apply: with the update
	// as failed and an error.
	failUnsolicited bool
}

// newRuntime returns an unstarted runtime whose ListFunc reports the
// existing fixture pod and containers.
func newRuntime(t testing.TB, opts ...adaptation.Option) *runtime {
	t.Helper()
	r := &runtime{State: harness.NewState(t)}
	all := append([]adaptation.Option{
		adaptation.WithPluginDir(r.Dir),
		adaptation.WithConfigDir(t.TempDir()),
		adaptation.WithSocketPath(r.Socket),
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
	pods, ctrs := r.List()
	return pods, ctrs, nil
}

func (r *runtime) update(_ context.Context, u []*api.ContainerUpdate, _ []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	r.Push(api.Clone(&api.UpdateContainersRequest{Update: u}).Update)
	if r.failUnsolicited && len(u) == 1 &&
		u[0].GetLinux().GetResources().GetMemory().GetLimit().GetValue() == behavior.UnsolicitedUpdateMiB<<20 {
		return u, errors.New("NRI update of some containers failed")
	}
	return nil, nil
}

// start starts the runtime and stops it at the end of the test.
func (r *runtime) start() {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		r.T.Fatalf("Start: %v", err)
	}
	r.T.Cleanup(func() { r.stop() })
}

// stop stops the runtime (again).
func (r *runtime) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		r.T.Errorf("Stop: %v", err)
	}
}

// external starts the test plugin as the external plugin idx-name.
func (r *runtime) external(idx, name string, args ...string) *testbin.Proc {
	r.T.Helper()
	full := api.FullPluginName(idx, name)
	args = append([]string{"-record", r.RecordFile(full), "-socket", r.Socket, "-idx", idx, "-name", name}, args...)
	return testbin.Start(r.T, pluginBin, args...)
}

// awaitActive waits until the external plugin fullName, running as proc,
// is active. The runtime offers no notification, so this polls Plugins.
func (r *runtime) awaitActive(fullName string, proc *testbin.Proc) adaptation.PluginInfo {
	r.T.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, p := range r.Plugins() {
			if p.FullName() == fullName && p.State == adaptation.StateActive {
				return p
			}
		}
		if proc.Wait(10 * time.Millisecond) {
			r.T.Fatalf("plugin %s exited before it was active: %v\n%s", fullName, proc.Err(), proc.Output())
		}
	}
	r.T.Fatalf("plugin %s not active within %v; plugins: %+v", fullName, hangGuard, r.Plugins())
	return adaptation.PluginInfo{}
}

// plugin returns the info of the plugin fullName, failing if absent.
func (r *runtime) plugin(fullName string) adaptation.PluginInfo {
	r.T.Helper()
	for _, p := range r.Plugins() {
		if p.FullName() == fullName {
			return p
		}
	}
	r.T.Fatalf("plugin %s not registered; plugins: %+v", fullName, r.Plugins())
	return adaptation.PluginInfo{}
}

// awaitUpdates waits for n calls of the UpdateFunc and returns them.
func (r *runtime) awaitUpdates(n int) [][]*api.ContainerUpdate {
	r.T.Helper()
	var out [][]*api.ContainerUpdate
	timeout := time.After(hangGuard)
	for len(out) < n {
		select {
		case u := <-r.Updates:
			out = append(out, u)
		case <-timeout:
			r.T.Fatalf("got %d UpdateFunc calls within %v, want %d", len(out), hangGuard, n)
		}
	}
	return out
}

// awaitRecord waits until the plugin fullName has recorded a request
// named event (for an unsolicited update: once it has the runtime's
// answer), so that stopping the runtime cannot cut that request short.
func (r *runtime) awaitRecord(fullName, event string) {
	r.T.Helper()
	deadline := time.Now().Add(hangGuard)
	for len(record.Filter(r.recordsOf(fullName), event)) == 0 {
		if time.Now().After(deadline) {
			r.T.Fatalf("plugin %s recorded no %s within %v", fullName, event, hangGuard)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// records reads the records of the plugin fullName.
func (r *runtime) recordsOf(fullName string) []record.Record {
	r.T.Helper()
	recs, err := record.Read(r.RecordFile(fullName))
	if err != nil {
		r.T.Fatal(err)
	}
	return recs
}

// events adapts the runtime to lifecycle.Runtime.
type events struct{ *adaptation.Adaptation }

func (e events) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) error {
	_, err := e.Adaptation.UpdatePodSandbox(ctx, req)
	return err
}
