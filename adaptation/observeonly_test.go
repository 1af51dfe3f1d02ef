package adaptation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

// watcher is a builtin plugin that declares it only observes (unless
// ordinary is set), subscribes to every event, and blocks in each mutating
// or validating handler until release is closed; it answers with changes
// (an environment variable, a rejection) that the runtime must drop.
type watcher struct {
	unimplementedPlugin
	ordinary bool
	release  chan struct{}

	mu   sync.Mutex
	seen []string
	got  chan string // every event, as it arrives
	// syncUpdate is answered to Synchronize.
	syncUpdate []*api.ContainerUpdate
}

func newWatcher() *watcher {
	return &watcher{release: make(chan struct{}), got: make(chan string, 64)}
}

func (w *watcher) note(s string) {
	w.mu.Lock()
	w.seen = append(w.seen, s)
	w.mu.Unlock()
	w.got <- s
}

func (w *watcher) events() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}

func (w *watcher) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{ObserveOnly: !w.ordinary}, nil
}

func (w *watcher) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.GetMore(), Update: w.syncUpdate}, nil
}

func (w *watcher) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	w.note("shutdown")
	return &api.Empty{}, nil
}

func (w *watcher) RunPodSandbox(_ context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	w.note("run " + req.GetPod().GetId())
	return &api.RunPodSandboxResponse{}, nil
}

func (w *watcher) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	<-w.release
	w.note("create " + req.GetContainer().GetId() + " " + strings.Join(req.GetContainer().GetEnv(), ","))
	return &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "OBSERVER", Value: "1"}}}}, nil
}

func (w *watcher) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	<-w.release
	w.note("validate " + req.GetContainer().GetId() + " " + strings.Join(envOf(req.GetAdjust()), ","))
	return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: "an observer's rejection is ignored"}, nil
}

func (w *watcher) PostCreateContainer(_ context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	w.note("postcreate " + req.GetContainer().GetId())
	return &api.PostCreateContainerResponse{}, nil
}

func (w *watcher) StopContainer(_ context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	<-w.release
	w.note("stop " + req.GetContainer().GetId())
	return &api.StopContainerResponse{Update: []*api.ContainerUpdate{{ContainerId: "ctr0"}}}, nil
}

// failing is a builtin plugin whose CreateContainer fails for the
// container IDs in fail.
type failing struct {
	inproc
	fail string
}

func (f *failing) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	if req.GetContainer().GetId() == f.fail {
		return nil, errors.New("refusing " + f.fail)
	}
	return f.inproc.CreateContainer(ctx, req)
}

// TestObserveOnlyIsNotWaitedFor checks that the runtime's calls return
// while an observe-only plugin still blocks in its handlers, that the
// observer then gets each event in order, after the other plugins (the
// container with their adjustment, validation with the combined one),
// that its answers (an adjustment, a rejection, an update) are dropped,
// and that it does not get a creation that failed. The same plugin
// without the declaration holds up the call (the test would hang there,
// bounded, without the extension).
func TestObserveOnlyIsNotWaitedFor(t *testing.T) {
	w := newWatcher()
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("05", "env", &failing{fail: "ctr1"}), WithBuiltinPlugin("01", "observer", w),
		WithDisabledExternalConnections())
	rt.start(t)
	if info, ok := rt.plugin("01-observer"); !ok || !info.ObserveOnly {
		t.Fatalf("observer registered as %+v (%v)", info, ok)
	}

	must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: testPod(0)}))
	quick := scaled(5 * time.Second)
	done := make(chan error, 1)
	go func() {
		rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		if err == nil && strings.Join(envOf(rsp.GetAdjust()), ",") != "INPROC=1" {
			err = errors.New("adjustment " + strings.Join(envOf(rsp.GetAdjust()), ","))
		}
		if err == nil {
			_, err = rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)})
			if err == nil || !strings.Contains(err.Error(), "refusing ctr1") {
				err = errors.New("the failing creation: " + errorString(err))
			} else {
				err = nil
			}
		}
		if err == nil {
			_, err = rt.a.StopContainer(ctxT(t), &api.StopContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(quick):
		close(w.release)
		t.Fatalf("the runtime's calls waited for the observe-only plugin (%v)", quick)
	}
	must(t, rt.a.PostCreateContainer(ctxT(t), &api.PostCreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}))

	close(w.release)
	want := []string{"run pod0", "create ctr0 BASE=1,INPROC=1", "validate ctr0 INPROC=1", "stop ctr0", "postcreate ctr0"}
	for range want {
		select {
		case <-w.got:
		case <-time.After(hangGuard):
			t.Fatalf("the observer got %v, want %v", w.events(), want)
		}
	}
	if got := w.events(); !slices.Equal(got, want) {
		t.Errorf("the observer got %v, want %v", got, want)
	}
	rt.logs.wait(t, "dropped changes", func(r logRecord) bool {
		return strings.Contains(r.msg, "observe-only plugin answered with changes")
	})
}

// TestObserveOnlyDrainedAtStop checks that Stop lets an observer finish
// the events whose calls did not wait for it before it sends Shutdown.
func TestObserveOnlyDrainedAtStop(t *testing.T) {
	w := newWatcher()
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("01", "observer", w), WithDisabledExternalConnections())
	rt.start(t)
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- rt.a.Stop(ctxT(t)) }()
	time.Sleep(scaled(100 * time.Millisecond))
	close(w.release)
	must(t, <-stopped)
	if got, want := w.events(), []string{"create ctr0 BASE=1", "validate ctr0 ", "shutdown"}; !slices.Equal(got, want) {
		t.Errorf("the observer got %v, want %v", got, want)
	}
}

// TestOrdinaryPluginIsWaitedFor is the control of
// TestObserveOnlyIsNotWaitedFor: the same plugin, not declaring itself an
// observer, holds up CreateContainer until it answers, and its answer is
// used.
func TestOrdinaryPluginIsWaitedFor(t *testing.T) {
	w := newWatcher()
	w.ordinary = true
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("05", "env", &inproc{}), WithBuiltinPlugin("01", "observer", w),
		WithDisabledExternalConnections())
	rt.start(t)
	done := make(chan error, 1)
	go func() {
		rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		if err == nil && !slices.Contains(envOf(rsp.GetAdjust()), "OBSERVER=1") {
			err = errors.New("its adjustment was not used")
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("CreateContainer returned before the plugin answered: %v", err)
	case <-time.After(scaled(200 * time.Millisecond)):
	}
	close(w.release)
	// The ordinary plugin's rejection fails the creation.
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rejection is ignored") {
		t.Errorf("CreateContainer: %v, want the plugin's rejection", err)
	}
}

// TestObserveOnlyUpdatesRefused checks that the updates an observe-only
// plugin asks for in Synchronize are not applied.
func TestObserveOnlyUpdatesRefused(t *testing.T) {
	w := newWatcher()
	close(w.release)
	w.syncUpdate = []*api.ContainerUpdate{{ContainerId: "ctr0", Linux: &api.LinuxContainerUpdate{}}}
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("01", "observer", w), WithDisabledExternalConnections())
	rt.store.AddPod(testPod(0))
	rt.store.AddCtr(testCtr(0, 0))
	rt.start(t)
	rt.logs.wait(t, "refused updates", func(r logRecord) bool {
		return strings.Contains(r.msg, "refusing the container updates of an observe-only plugin")
	})
	if n := rt.store.UpdateCalls(); n != 0 {
		t.Errorf("the observer's Synchronize update was applied (%d update calls)", n)
	}
}

func errorString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
