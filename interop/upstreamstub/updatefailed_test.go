package upstreamstub

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// TestUnsolicitedUpdateFailed: nrikit's runtime fails an upstream-stub
// plugin's unsolicited update with the failed list in the error status's
// details (docs/protocol.md, section 9). Upstream's stub ignores the
// details: the plugin gets the runtime's error, as from upstream's
// runtime, and no list.
func TestUnsolicitedUpdateFailed(t *testing.T) {
	const idx, name = "50", "upstream"
	full := api.FullPluginName(idx, name)
	r := newRuntime(t)
	r.failUnsolicited = true
	r.Install(pluginBin, full, "-mode", string(behavior.Observe), "-unsolicited")
	r.start()
	r.awaitUpdates(2) // the answer to Synchronize and the unsolicited update
	// The runtime has failed the update; the plugin gets the answer a
	// moment later, and stopping before that would leave it "ttrpc: closed".
	r.awaitRecord(full, "UpdateContainers")
	r.stop()

	u, ok := lifecycle.One(t, r.recordsOf(full), "UpdateContainers")
	if !ok {
		return
	}
	if !strings.Contains(u.Err, "runtime failed to update containers: NRI update of some containers failed") {
		t.Errorf("the plugin's UpdateContainers error %q, want the runtime's", u.Err)
	}
	if got := lifecycle.Decode(t, u.Rsp, &api.UpdateContainersResponse{}); len(got.GetFailed()) != 0 {
		t.Errorf("upstream's stub returned %d failed updates, want none", len(got.GetFailed()))
	}
}
