package nrikitstub

import (
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/behavior"
	"github.com/nrikit/nrikit/interop/internal/fixture"
	"github.com/nrikit/nrikit/interop/internal/lifecycle"
	"github.com/nrikit/nrikit/interop/internal/record"
)

// TestLifecycle runs a nrikit-stub plugin implementing every event, with
// no subscription of its own, against upstream's runtime: pre-installed,
// external, and external with nrikit's extensions (a scope matching the
// fixture's pods, its own request timeout, opting out of the pod and the
// container): upstream ignores them, and the stub, seeing that upstream
// does not filter, evaluates the scope itself and lets the in-scope
// events through. The stub must infer from the NRI version in
// Configure (or, failing that, the runtime's name and version) that upstream delivers every event and subscribe to all of
// them (see runtimeName); the plugin must see every event with the right data, and
// upstream's results must be what the plugin answered.
func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		external bool
		args     []string
	}{
		{name: "pre-installed"},
		{name: "external", external: true},
		{name: "extensions", external: true, args: []string{"-scope", fixture.PodNS, "-request-timeout", "7s", "-opt-out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testLifecycle(t, tc.external, tc.args)
		})
	}
}

func testLifecycle(t *testing.T, external bool, extra []string) {
	const idx, name = "60", "nrikit"
	full := api.FullPluginName(idx, name)
	r := newRuntime(t, runtimeName, runtimeVersion)
	args := append([]string{"-mode", string(behavior.Observe), "-unsolicited"}, extra...)
	if external {
		r.start()
		r.awaitSynced(r.external(idx, name, args...))
	} else {
		r.Install(pluginBin, full, args...)
		r.start()
	}

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
		t.Errorf("runtime got updates of %v MiB, want the Synchronize (%d) and the unsolicited (%d) one",
			seen, behavior.SyncUpdateMiB, behavior.UnsolicitedUpdateMiB)
	}

	res := r.drive()

	recs := r.recordsOf(full)
	if st, ok := lifecycle.One(t, recs, "Start"); ok {
		if st.Err != "" {
			t.Errorf("Start failed: %s", st.Err)
		}
		info := lifecycle.Decode(t, st.Req, &api.ConfigureRequest{})
		sub := api.EventMask(lifecycle.Decode(t, st.Rsp, &api.ConfigureResponse{}).Events)
		if sub != api.AllEvents {
			t.Errorf("stub (runtime NRI version %q) subscribed to %s, want all events", info.NRIVersion, sub)
		}
		if info.RuntimeName != runtimeName || info.RequestTimeout != (20*time.Second).Milliseconds() {
			t.Errorf("stub adopted runtime %q and request timeout %d ms", info.RuntimeName, info.RequestTimeout)
		}
	}
	lifecycle.CheckDelivered(t, res, recs)
	lifecycle.CheckValidation(t, res, recs, full)
	lifecycle.CheckCreate(t, res, recs, nil) // upstream's runtime drops evictions
	lifecycle.CheckUpdate(t, res, recs)
	lifecycle.CheckStop(t, res, recs)
	if c, ok := lifecycle.One(t, recs, api.Event_CREATE_CONTAINER.Name()); ok {
		if sent := lifecycle.Decode(t, c.Rsp, &api.CreateContainerResponse{}); len(sent.Evict) != 1 {
			t.Errorf("plugin sent %d evictions, want 1 (which upstream's runtime ignores)", len(sent.Evict))
		}
	}
	if s, ok := lifecycle.One(t, recs, "Synchronize"); ok {
		got := lifecycle.Decode(t, s.Req, &api.SynchronizeRequest{})
		pods, ctrs := r.List()
		lifecycle.ExpectEqual(t, "Synchronize request", &api.SynchronizeRequest{Pods: pods, Containers: ctrs}, got)
	}
	if u, ok := lifecycle.One(t, recs, "UpdateContainers"); ok && u.Err != "" {
		t.Errorf("unsolicited UpdateContainers failed: %s", u.Err)
	}
}

// TestUnknownRuntimeVersion runs a nrikit-stub plugin implementing every
// event under an upstream runtime whose NRI version cannot be determined:
// the stub subscribes to the events every runtime delivers and still
// registers and works.
func TestUnknownRuntimeVersion(t *testing.T) {
	t.Parallel()
	const idx, name = "60", "nrikit"
	full := api.FullPluginName(idx, name)
	r := newRuntime(t, "interop-upstream", "v0.0.1")
	r.start()
	r.awaitSynced(r.external(idx, name, "-mode", string(behavior.Observe)))
	r.awaitUpdates(1) // the answer to Synchronize
	res := r.drive()
	recs := r.recordsOf(full)
	oldest := api.AllEvents.Clear(api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	if st, ok := lifecycle.One(t, recs, "Start"); ok {
		if sub := api.EventMask(lifecycle.Decode(t, st.Rsp, &api.ConfigureResponse{}).Events); st.Err != "" || sub != oldest {
			t.Errorf("Start: error %q, subscription %s; want success and %s", st.Err, sub, oldest)
		}
	}
	for _, e := range oldest.Events() {
		lifecycle.One(t, recs, e.Name())
	}
	for _, e := range []api.Event{api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX, api.Event_VALIDATE_CONTAINER_ADJUSTMENT} {
		if n := len(record.Filter(recs, e.Name())); n != 0 {
			t.Errorf("plugin got %d %s requests it did not subscribe to", n, e.Name())
		}
	}
	lifecycle.CheckCreate(t, res, recs, nil)
}
