package adaptation

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/stub"
)

// failingStore is a runtime whose UpdateFunc fails as containerd's does
// when an update cannot be applied: it returns the updates that failed
// and an error. Updates of containers whose ID starts with "bad" fail;
// failed, when set, is returned instead.
type failingStore struct {
	*runtimetest.Store
	failed []*api.ContainerUpdate
}

func (s *failingStore) update(_ context.Context, ups []*api.ContainerUpdate, _ []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	failed := s.failed
	if failed == nil {
		for _, u := range ups {
			if strings.HasPrefix(u.GetContainerId(), "bad") {
				failed = append(failed, u)
			}
		}
	}
	if len(failed) == 0 {
		return nil, nil
	}
	return failed, errors.New("NRI update of some containers failed")
}

// startUpdater starts a runtime on rt and a stub plugin with scope (nil:
// none) connected to it, synchronized.
func startUpdater(t *testing.T, rt *failingStore, scope *api.PluginScope) *stub.Stub {
	t.Helper()
	logs := newLogSink(t)
	a, err := New("test-runtime", "v1", rt.List, rt.update, WithPluginDir(""), WithDisabledExternalConnections(),
		WithLogger(logs.logger()))
	must(t, err)
	must(t, a.Start(ctxT(t)))
	stopAtCleanup(t, a, logs)
	rtEnd, plEnd := net.Pipe()
	opts := []stub.Option{stub.WithConnection(plEnd), stub.WithPluginName("upd"), stub.WithPluginIdx("10")}
	if scope != nil {
		opts = append(opts, stub.WithScope(scope))
	}
	plugin, err := stub.New(&inScopeOnly{}, opts...)
	must(t, err)
	go a.ServeConn(context.Background(), rtEnd)
	must(t, plugin.Start(ctxT(t)))
	t.Cleanup(plugin.Stop)
	logs.wait(t, "the plugin synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" })
	return plugin
}

func ids(ups []*api.ContainerUpdate) []string {
	var out []string
	for _, u := range ups {
		out = append(out, u.GetContainerId())
	}
	return out
}

// TestUpdateContainersFailedWithError: when the runtime's UpdateFunc fails
// UpdateContainers, ttrpc sends the error and no answer; the updates that
// failed reach the stub in the error status's details, and
// Stub.UpdateContainers returns them with the error (before, it returned
// none). Updates refused as outside the plugin's scope come first.
func TestUpdateContainersFailedWithError(t *testing.T) {
	t.Run("no scope", func(t *testing.T) {
		plugin := startUpdater(t, &failingStore{Store: runtimetest.NewStore()}, nil)
		ups := []*api.ContainerUpdate{{ContainerId: "good1"}, {ContainerId: "bad1"}, {ContainerId: "bad2", IgnoreFailure: true}}
		failed, err := plugin.UpdateContainers(ctxT(t), ups, nil)
		if err == nil || !strings.Contains(err.Error(), "runtime failed to update containers: NRI update of some containers failed") {
			t.Fatalf("error %v", err)
		}
		if got := ids(failed); !slices.Equal(got, []string{"bad1", "bad2"}) || !failed[1].GetIgnoreFailure() {
			t.Errorf("failed %v, want bad1 and bad2 as sent", failed)
		}
		// A request the runtime applies answers as before.
		failed, err = plugin.UpdateContainers(ctxT(t), ups[:1], nil)
		if err != nil || len(failed) != 0 {
			t.Errorf("good update: failed %v, error %v", failed, err)
		}
	})
	t.Run("scope", func(t *testing.T) {
		st := runtimetest.NewStore()
		st.AddPod(&api.PodSandbox{Id: "pod0", Name: "gpu", Namespace: "ns", Labels: map[string]string{"accel": "gpu"}})
		st.AddCtr(&api.Container{Id: "bad-in-scope", PodSandboxId: "pod0", Name: "c"})
		plugin := startUpdater(t, &failingStore{Store: st}, gpuScope)
		ups := []*api.ContainerUpdate{{ContainerId: "bad-in-scope"}, {ContainerId: "elsewhere"}}
		failed, err := plugin.UpdateContainers(ctxT(t), ups, nil)
		if err == nil {
			t.Fatal("no error")
		}
		if got := ids(failed); !slices.Equal(got, []string{"elsewhere", "bad-in-scope"}) {
			t.Errorf("failed %v, want the refused one, then the runtime's", got)
		}
	})
}

// TestUpdateContainersFailedTooLarge: a list of failed updates that would
// make the error status larger than a message is left out: the plugin
// gets the error alone, and its connection stays (a response above ttrpc's
// limit would close it).
func TestUpdateContainersFailedTooLarge(t *testing.T) {
	big := &api.ContainerUpdate{ContainerId: "bad-huge", Linux: &api.LinuxContainerUpdate{
		Resources: &api.LinuxResources{Unified: map[string]string{"x": strings.Repeat("x", MaxMessageSize)}}}}
	rt := &failingStore{Store: runtimetest.NewStore(), failed: []*api.ContainerUpdate{big}}
	plugin := startUpdater(t, rt, nil)
	failed, err := plugin.UpdateContainers(ctxT(t), []*api.ContainerUpdate{{ContainerId: "bad1"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "NRI update of some containers failed") || failed != nil {
		t.Fatalf("failed %d updates, error %v; want the error alone", len(failed), err)
	}
	rt.failed = nil // read by the runtime's next UpdateFunc call, after this write
	failed, err = plugin.UpdateContainers(ctxT(t), []*api.ContainerUpdate{{ContainerId: "bad2"}}, nil)
	if err == nil || !slices.Equal(ids(failed), []string{"bad2"}) {
		t.Errorf("after the large list: failed %v, error %v; want bad2 and the error, on the same connection", ids(failed), err)
	}
}
