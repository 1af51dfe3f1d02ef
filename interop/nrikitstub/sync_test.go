package nrikitstub

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// TestSynchronize10000 synchronizes a nrikit-stub plugin with 10,000
// containers through upstream's runtime; the plugin's answer reaches the
// runtime.
func TestSynchronize10000(t *testing.T) {
	t.Parallel()
	const idx, name, nPods, nCtrs = "60", "sync", 250, 10000
	full := api.FullPluginName(idx, name)
	r := newRuntime(t, runtimeName, runtimeVersion)
	pods, ctrs := fixture.SyncPods(nPods), fixture.SyncContainers(nPods, nCtrs)
	r.SetState(pods, ctrs)
	r.start()
	r.awaitSynced(r.external(idx, name, "-mode", string(behavior.Sync)))
	us := r.awaitUpdates(1)[0]
	if len(us) != 1 || us[0].GetContainerId() != ctrs[nCtrs-1].Id {
		t.Errorf("runtime got %v, want the plugin's update of %s", us, ctrs[nCtrs-1].Id)
	}
	s, ok := lifecycle.One(t, r.recordsOf(full), "Synchronize")
	if !ok {
		t.FailNow()
	}
	got := lifecycle.Decode(t, s.Req, &api.SynchronizeRequest{})
	if len(got.Pods) != nPods || len(got.Containers) != nCtrs {
		t.Fatalf("plugin got %d pods and %d containers, want %d and %d", len(got.Pods), len(got.Containers), nPods, nCtrs)
	}
	lifecycle.ExpectEqual(t, "Synchronize request", &api.SynchronizeRequest{Pods: pods, Containers: ctrs}, got)
}
