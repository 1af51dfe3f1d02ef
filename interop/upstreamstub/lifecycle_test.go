package upstreamstub

import (
	"context"
	"testing"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
)

// TestLifecycle runs an upstream-stub plugin subscribed to every event,
// pre-installed and external, through registration, Synchronize, an
// unsolicited update, every event of a pod and a container, and
// Shutdown, and checks what it saw and what nrikit's runtime made of its
// answers.
func TestLifecycle(t *testing.T) {
	for _, kind := range []adaptation.PluginKind{adaptation.KindPreinstalled, adaptation.KindExternal} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			testLifecycle(t, kind)
		})
	}
}

func testLifecycle(t *testing.T, kind adaptation.PluginKind) {
	const idx, name = "50", "upstream"
	full := api.FullPluginName(idx, name)
	r := newRuntime(t)
	args := []string{"-mode", string(behavior.Observe), "-unsolicited"}
	if kind == adaptation.KindPreinstalled {
		r.Install(pluginBin, full, args...)
		r.start()
	} else {
		r.start()
		p := r.external(idx, name, args...)
		r.awaitActive(full, p)
		defer func() {
			if !p.Wait(hangGuard) {
				t.Errorf("external plugin did not exit after the runtime stopped")
			}
		}()
	}
	info := r.plugin(full)
	if info.Kind != kind || info.State != adaptation.StateActive {
		t.Fatalf("plugin %s is %s and %s, want %s and active", full, info.Kind, info.State, kind)
	}
	if info.Events != api.AllEvents {
		t.Errorf("plugin subscribed to %s, want all events", info.Events)
	}

	// The answer to Synchronize and the unsolicited update reach the
	// UpdateFunc, in either order.
	seen := map[int64]bool{}
	for _, us := range r.awaitUpdates(2) {
		for _, u := range us {
			if u.GetContainerId() != fixture.OtherCtrID {
				t.Errorf("update of %q, want %s", u.GetContainerId(), fixture.OtherCtrID)
			}
			seen[u.GetLinux().GetResources().GetMemory().GetLimit().GetValue()>>20] = true
		}
	}
	if !seen[behavior.SyncUpdateMiB] || !seen[behavior.UnsolicitedUpdateMiB] {
		t.Errorf("UpdateFunc got updates of %v MiB, want the Synchronize (%d) and the unsolicited (%d) one",
			seen, behavior.SyncUpdateMiB, behavior.UnsolicitedUpdateMiB)
	}

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := lifecycle.Drive(ctx, events{r.Adaptation})
	if err != nil {
		t.Fatalf("driving the container's lifecycle: %v", err)
	}
	r.stop()

	recs := r.recordsOf(full)
	lifecycle.CheckDelivered(t, res, recs)
	lifecycle.CheckValidation(t, res, recs, full)
	lifecycle.CheckCreate(t, res, recs, nil) // upstream's stub cannot evict
	lifecycle.CheckUpdate(t, res, recs)
	lifecycle.CheckStop(t, res, recs)

	if c, ok := lifecycle.One(t, recs, "Configure"); ok {
		cfg := lifecycle.Decode(t, c.Req, &api.ConfigureRequest{})
		if cfg.RuntimeName != "interop-nrikit" || cfg.RuntimeVersion != "v0.0.0" {
			t.Errorf("plugin was configured by %q %q", cfg.RuntimeName, cfg.RuntimeVersion)
		}
	}
	if s, ok := lifecycle.One(t, recs, "Synchronize"); ok {
		got := lifecycle.Decode(t, s.Req, &api.SynchronizeRequest{})
		pods, ctrs, _ := r.list(ctx)
		lifecycle.ExpectEqual(t, "Synchronize request", &api.SynchronizeRequest{Pods: pods, Containers: ctrs}, got)
	}
	if u, ok := lifecycle.One(t, recs, "UpdateContainers"); ok && u.Err != "" {
		t.Errorf("unsolicited UpdateContainers failed: %s", u.Err)
	}
	if st, ok := lifecycle.One(t, recs, "Start"); ok && st.Err != "" {
		t.Errorf("Start failed: %s", st.Err)
	}
	lifecycle.One(t, recs, "Shutdown")
	for _, rec := range recs {
		if rec.Plugin != full {
			t.Errorf("record of %s by %q, want %s", rec.Event, rec.Plugin, full)
		}
	}
}
