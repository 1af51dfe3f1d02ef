package api

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestEventTableMatchesTheProto checks every row of the generated event
// table against the compiled proto: the Plugin service's method of the
// event's name, its request and response, pod or container, and the
// fields the generator reads from the comments.
func TestEventTableMatchesTheProto(t *testing.T) {
	svc := File_nrikit_nri_proto.Services().ByName("Plugin")
	for _, e := range Events() {
		info := e.Info()
		m := svc.Methods().ByName(protoreflect.Name(info.Name))
		if m == nil {
			t.Errorf("%s: the Plugin service has no method %q", e, info.Name)
			continue
		}
		if string(m.Input().FullName()) != info.Request || string(m.Output().FullName()) != info.Response {
			t.Errorf("%s: table %s -> %s, method %s -> %s", e, info.Request, info.Response, m.Input().FullName(), m.Output().FullName())
		}
		if pod := m.Input().Fields().ByName("container") == nil; pod != info.Pod || pod != PodEvents.IsSet(e) {
			t.Errorf("%s: pod event %v, table %v, PodEvents %v", e, pod, info.Pod, PodEvents.IsSet(e))
		}
		if info.StateChange != StateChangeEvents.IsSet(e) {
			t.Errorf("%s: StateChange %v, StateChangeEvents %v", e, info.StateChange, StateChangeEvents.IsSet(e))
		}
		if info.Kind.String() == "EventKind(?)" || info.Since == "" || info.WASMExport == "" {
			t.Errorf("%s: incomplete row %+v", e, info)
		}
	}
	if got := Event_VALIDATE_CONTAINER_ADJUSTMENT.Info(); got.Kind != EventValidating || got.Since != "v0.10.0" {
		t.Errorf("ValidateContainerAdjustment: %+v", got)
	}
	if (Event_LAST.Info() != EventInfo{}) || (Event(99).Info() != EventInfo{}) {
		t.Error("a value that is not an event has a row")
	}
}
