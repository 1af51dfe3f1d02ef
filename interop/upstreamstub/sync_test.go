package upstreamstub

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// TestSynchronize10000 synchronizes an upstream-stub plugin with 10,000
// containers: nrikit's runtime splits them into parts, upstream's stub
// collects the parts and hands them to the plugin at once, and the
// plugin's answer reaches the UpdateFunc.
func TestSynchronize10000(t *testing.T) {
	t.Parallel()
	const idx, name, nPods, nCtrs = "50", "sync", 250, 10000
	full := api.FullPluginName(idx, name)
	r := newRuntime(t)
	pods, ctrs := fixture.SyncPods(nPods), fixture.SyncContainers(nPods, nCtrs)
	if size := proto.Size(&api.SynchronizeRequest{Pods: pods, Containers: ctrs}); size <= adaptation.MaxSyncMessageSize {
		t.Fatalf("the state encodes to %d bytes, too few to be split (limit %d)", size, adaptation.MaxSyncMessageSize)
	}
	r.SetState(pods, ctrs)
	r.start()
	p := r.external(idx, name, "-mode", string(behavior.Sync))
	r.awaitActive(full, p)

	us := r.awaitUpdates(1)[0]
	if len(us) != 1 || us[0].GetContainerId() != ctrs[nCtrs-1].Id {
		t.Errorf("UpdateFunc got %v, want the plugin's update of %s", us, ctrs[nCtrs-1].Id)
	}
	r.stop()
	recs := r.recordsOf(full)
	s, ok := lifecycle.One(t, recs, "Synchronize")
	if !ok {
		t.FailNow()
	}
	got := lifecycle.Decode(t, s.Req, &api.SynchronizeRequest{})
	if len(got.Pods) != nPods || len(got.Containers) != nCtrs {
		t.Fatalf("plugin got %d pods and %d containers, want %d and %d", len(got.Pods), len(got.Containers), nPods, nCtrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	wantPods, wantCtrs, _ := r.list(ctx)
	lifecycle.ExpectEqual(t, "collected Synchronize request", &api.SynchronizeRequest{Pods: wantPods, Containers: wantCtrs}, got)
}
