package core

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestEventsForNRIVersion(t *testing.T) {
	// The expectations restate the facts the table was built from: the
	// Event enum of each release's pkg/api/api.proto.
	eleven := api.MaskOf(api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX,
		api.Event_CREATE_CONTAINER, api.Event_POST_CREATE_CONTAINER, api.Event_START_CONTAINER,
		api.Event_POST_START_CONTAINER, api.Event_UPDATE_CONTAINER, api.Event_POST_UPDATE_CONTAINER,
		api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER)
	thirteen := eleven.Set(api.Event_UPDATE_POD_SANDBOX, api.Event_POST_UPDATE_POD_SANDBOX)
	for _, tc := range []struct {
		version string
		want    api.EventMask
		ok      bool
	}{
		{"v0.1.0", 0, false},
		{"v0.2.0", eleven, true},
		{"v0.3.0", eleven, true},
		{"v0.3.1-0.20230504231226-94185418e253", eleven, true},
		{"v0.4.0", eleven, true},
		{"v0.5.0", eleven, true},
		{"v0.6.0", eleven, true},
		{"v0.6.1", eleven, true},
		{"v0.7.0", eleven, true},
		{"v0.8.0", eleven, true},
		{"v0.9.0", eleven, true},
		{"v0.9.1-0.20250219030224-e597e7849f24", thirteen, true},
		{"v0.9.1-0.20250101000000-000000000000", eleven, true}, // other pre-releases round down
		{"v0.10.0-rc.1", thirteen, true},                       // after the pod updates, before validation
		{"v0.10.0", api.AllEvents, true},
		{"v0.11.0", api.AllEvents, true},
		{"v0.12.5", api.AllEvents, true},
		{"0.12.5", api.AllEvents, true},
		{"v0.13.0", api.AllEvents, true},
		{"v0.11.0-3-gabc123", api.AllEvents, true},
		{"garbage", 0, false},
		{"", 0, false},
	} {
		got, ok := eventsForNRIVersion(tc.version)
		if got != tc.want || ok != tc.ok {
			t.Errorf("eventsForNRIVersion(%q) = %s, %v; want %s, %v", tc.version, got, ok, tc.want, tc.ok)
		}
	}
}

func TestInferNRIVersion(t *testing.T) {
	for _, tc := range []struct {
		runtime, version string
		want             string
	}{
		{"containerd", "v1.6.20", ""},
		{"containerd", "v1.7.0", "v0.3.0"},
		{"containerd", "v1.7.6", "v0.3.0"},
		{"containerd", "v1.7.7", "v0.4.0"},
		{"containerd", "v1.7.15", "v0.6.0"},
		{"containerd", "v1.7.25", "v0.6.1"},
		{"containerd", "v1.7.30", "v0.8.0"},
		{"containerd", "v1.7.31", "v0.8.0"},
		{"containerd", "v2.0.4", "v0.8.0"},
		{"containerd", "v2.1.6", "v0.8.0"},
		{"containerd", "v2.2.0", "v0.10.0"},
		{"containerd", "v2.2.0-rc.1", "v0.8.0"},
		{"containerd", "v2.2.0-225-ge9dc15b7a.m", "v0.10.0"},
		{"containerd", "v2.2.1", "v0.11.0"},
		{"containerd", "v2.3.0", "v0.11.0"},
		{"cri-o", "1.26.1", "v0.2.0"},
		{"cri-o", "v1.26.5", "v0.3.1-0.20230504231226-94185418e253"},
		{"cri-o", "v1.27.0", "v0.3.0"},
		{"cri-o", "v1.28.11", "v0.3.1-0.20230504231226-94185418e253"},
		{"cri-o", "v1.29.1", "v0.5.0"},
		{"cri-o", "v1.30.14", "v0.6.0"},
		{"cri-o", "v1.31.3", "v0.6.1"},
		{"cri-o", "v1.32.12", "v0.9.0"},
		{"cri-o", "1.33.0", "v0.9.1-0.20250219030224-e597e7849f24"},
		{"cri-o", "v1.34.4", "v0.10.0"},
		{"cri-o", "v1.35.0", "v0.11.0"},
		{"CRI-O", "v1.35.0", "v0.11.0"},
		{"podman", "v5.0.0", ""},
		{"containerd", "main", ""},
	} {
		got, ok := inferNRIVersion(tc.runtime, tc.version)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("inferNRIVersion(%q, %q) = %q, %v; want %q", tc.runtime, tc.version, got, ok, tc.want)
		}
	}
}

func TestResolveSubscription(t *testing.T) {
	create := api.MaskOf(api.Event_CREATE_CONTAINER)
	upd := api.MaskOf(api.Event_UPDATE_POD_SANDBOX)
	val := api.MaskOf(api.Event_VALIDATE_CONTAINER_ADJUSTMENT)
	known := runtimeEvents{supported: oldestEvents(), known: true, basis: "test"}
	unknown := runtimeEvents{supported: oldestEvents(), known: false, basis: "test"}
	for _, tc := range []struct {
		name             string
		wanted, required api.EventMask
		rt               runtimeEvents
		events, dropped  api.EventMask
		fails            bool
	}{
		{"all supported", create, 0, known, create, 0, false},
		{"drops unsupported", create | upd, 0, known, create, upd, false},
		{"required unsupported", create | upd, upd, known, 0, 0, true},
		{"unknown version keeps required", create | upd | val, upd, unknown, create | upd, val, false},
		{"unknown version drops optional", create | upd, 0, unknown, create, upd, false},
		{"nothing left", upd, 0, known, 0, 0, true},
	} {
		sub, err := resolveSubscription(tc.wanted, tc.required, tc.rt)
		if (err != nil) != tc.fails {
			t.Errorf("%s: error = %v, want failure %v", tc.name, err, tc.fails)
			continue
		}
		if sub.events != tc.events || sub.dropped != tc.dropped {
			t.Errorf("%s: got %s dropping %s, want %s dropping %s", tc.name, sub.events, sub.dropped, tc.events, tc.dropped)
		}
	}
}

func TestSupportedEventsBasis(t *testing.T) {
	for _, tc := range []struct {
		req   *api.ConfigureRequest
		want  api.EventMask
		known bool
		nri   string
	}{
		{&api.ConfigureRequest{SupportedEvents: int32(oldestEvents()), NRIVersion: "v0.12.5"}, oldestEvents(), true, "v0.12.5"},
		{&api.ConfigureRequest{NRIVersion: "v0.12.5"}, api.AllEvents, true, "v0.12.5"},
		{&api.ConfigureRequest{NRIVersion: "(devel)", RuntimeName: "containerd", RuntimeVersion: "v2.2.1"}, api.AllEvents, true, "v0.11.0"},
		{&api.ConfigureRequest{NRIVersion: "weird", RuntimeName: "containerd", RuntimeVersion: "v1.7.20"}, oldestEvents(), true, "v0.6.1"},
		{&api.ConfigureRequest{RuntimeName: "x", RuntimeVersion: "y"}, oldestEvents(), false, ""},
	} {
		got := supportedEvents(tc.req)
		if got.supported != tc.want || got.known != tc.known || got.nriVersion != tc.nri {
			t.Errorf("supportedEvents(%v) = %+v; want %s known=%v nri=%q", tc.req, got, tc.want, tc.known, tc.nri)
		}
	}
}
