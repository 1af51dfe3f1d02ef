package main

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/tools/internal/prototest"
)

// readProtoEvents compiles text as nrikit/nri.proto, with its comments as
// protoc hands them to a plugin, and reads the event table from it.
func readProtoEvents(t *testing.T, text string) ([]event, error) {
	t.Helper()
	return readEvents(prototest.File(t, text))
}

// TestEventsOfTheProto reads the table of the real nri.proto, then shows
// that each way of leaving an event's facts out fails generation.
func TestEventsOfTheProto(t *testing.T) {
	proto := prototest.NRIProto(t)
	events, err := readProtoEvents(t, proto)
	if err != nil || len(events) != 14 {
		t.Fatalf("the proto's events: %d, %v; want 14", len(events), err)
	}
	if e := events[0]; e.method != "RunPodSandbox" || !e.pod || !e.fallback || e.kind != "EventMutating" || e.since != "v0.2.0" ||
		e.request != "nri.pkg.api.v1alpha1.RunPodSandboxRequest" {
		t.Errorf("RUN_POD_SANDBOX: %+v", e)
	}
	if e := events[13]; e.method != "ValidateContainerAdjustment" || e.pod || e.fallback || e.kind != "EventValidating" {
		t.Errorf("VALIDATE_CONTAINER_ADJUSTMENT: %+v", e)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"no line", "  // nri: since=v0.2.0 kind=mutating\n  CREATE_CONTAINER = 4;", "  CREATE_CONTAINER = 4;", "CREATE_CONTAINER: no"},
		{"no kind", "// nri: since=v0.10.0 kind=validating\n", "// nri: since=v0.10.0\n", "since= and kind= are required"},
		{"bad kind", "// nri: since=v0.10.0 kind=validating\n", "// nri: since=v0.10.0 kind=checking\n", `malformed "kind=checking"`},
		{"bad version", "// nri: since=v0.10.0 kind=validating\n", "// nri: since=0.10 kind=validating\n", `malformed "since=0.10"`},
		{"no method", "  LAST = 15;", "  // nri: since=v0.13.0 kind=notification\n  SHINY_EVENT = 15;\n  LAST = 16;", "no method ShinyEvent"},
		{"LAST", "  LAST = 15;", "  LAST = 16;", "LAST must be the last value"},
	} {
		text := strings.Replace(proto, tc.old, tc.new, 1)
		if text == proto {
			t.Fatalf("%s: %q is not in the proto", tc.name, tc.old)
		}
		if _, err := readProtoEvents(t, text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
