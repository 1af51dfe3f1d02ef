package api

import (
	"strings"
	"testing"
)

func TestEventMaskBits(t *testing.T) {
	for _, e := range Events() {
		if got, want := e.Mask(), EventMask(1)<<(int32(e)-1); got != want {
			t.Errorf("%s.Mask() = %#x, want %#x", e.Name(), got, want)
		}
	}
	if AllEvents != 0x3fff {
		t.Errorf("AllEvents = %#x, want 0x3fff (events 1..14)", AllEvents)
	}
	if PodEvents&ContainerEvents != 0 || PodEvents|ContainerEvents != AllEvents {
		t.Errorf("pod %#x and container %#x masks must partition all events", PodEvents, ContainerEvents)
	}
	// The events upstream's runtime (v0.12.5, pkg/adaptation/plugin_type.go)
	// retries as StateChange after UNIMPLEMENTED.
	if want := MaskOf(Event_RUN_POD_SANDBOX, Event_POST_UPDATE_POD_SANDBOX, Event_STOP_POD_SANDBOX,
		Event_REMOVE_POD_SANDBOX, Event_POST_CREATE_CONTAINER, Event_START_CONTAINER,
		Event_POST_START_CONTAINER, Event_POST_UPDATE_CONTAINER, Event_REMOVE_CONTAINER); StateChangeEvents != want {
		t.Errorf("StateChangeEvents = %s, want %s", StateChangeEvents, want)
	}
	if Event_UNKNOWN.Mask() != 0 || Event_LAST.Mask() != 0 || Event(99).Mask() != 0 {
		t.Error("non-events must have an empty mask")
	}
}

func TestParseEventMask(t *testing.T) {
	tests := []struct {
		in      []string
		want    EventMask
		wantErr string
	}{
		{[]string{"CreateContainer,StopContainer"}, MaskOf(Event_CREATE_CONTAINER, Event_STOP_CONTAINER), ""},
		{[]string{"createcontainer", " STOP_CONTAINER "}, MaskOf(Event_CREATE_CONTAINER, Event_STOP_CONTAINER), ""},
		{[]string{"all"}, AllEvents, ""},
		{[]string{"pod"}, MaskOf(Event_RUN_POD_SANDBOX, Event_STOP_POD_SANDBOX, Event_REMOVE_POD_SANDBOX,
			Event_UPDATE_POD_SANDBOX, Event_POST_UPDATE_POD_SANDBOX), ""},
		{[]string{"container"}, AllEvents &^ PodEvents, ""},
		{[]string{"pod,container"}, AllEvents, ""},
		{[]string{""}, 0, ""},
		{[]string{"CreateContainer,Bogus"}, 0, `unknown event "Bogus"`},
		{[]string{"LAST"}, 0, `unknown event "LAST"`},
	}
	for _, tt := range tests {
		got, err := ParseEventMask(tt.in...)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseEventMask(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseEventMask(%q) = %#x, %v; want %#x", tt.in, got, err, tt.want)
		}
	}
}

func TestEventMaskString(t *testing.T) {
	tests := []struct {
		m    EventMask
		want string
	}{
		{0, "none"},
		{MaskOf(Event_UPDATE_POD_SANDBOX, Event_POST_UPDATE_POD_SANDBOX), "UpdatePodSandbox,PostUpdatePodSandbox"},
		{MaskOf(Event_RUN_POD_SANDBOX) | 1<<20, "RunPodSandbox,unknown(0x100000)"},
	}
	for _, tt := range tests {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("%#x.String() = %q, want %q", int32(tt.m), got, tt.want)
		}
	}
	// Round trip through the parser for every single event.
	for _, e := range Events() {
		m, err := ParseEventMask(e.Mask().String())
		if err != nil || m != e.Mask() {
			t.Errorf("round trip of %s: %#x, %v", e.Name(), m, err)
		}
	}
}

func TestEventMaskSetClear(t *testing.T) {
	var m EventMask
	m = m.Set(Event_CREATE_CONTAINER, Event_REMOVE_CONTAINER)
	if !m.IsSet(Event_CREATE_CONTAINER) || !m.IsSet(Event_REMOVE_CONTAINER) || m.IsSet(Event_START_CONTAINER) {
		t.Fatalf("Set: %s", m)
	}
	m = m.Clear(Event_CREATE_CONTAINER)
	if m.IsSet(Event_CREATE_CONTAINER) || !m.IsSet(Event_REMOVE_CONTAINER) {
		t.Fatalf("Clear: %s", m)
	}
	if m.IsSet(Event_UNKNOWN) || EventMask(-1).IsSet(Event_LAST) {
		t.Fatal("IsSet must be false for non-events")
	}
	if got := (AllEvents | 1<<30).Unknown(); got != 1<<30 {
		t.Fatalf("Unknown() = %#x", got)
	}
}

func TestParseEventNames(t *testing.T) {
	for _, e := range Events() {
		got, err := ParseEvent(e.String()) // enum name, e.g. CREATE_CONTAINER
		if err != nil || got != e {
			t.Errorf("ParseEvent(%q) = %v, %v", e.String(), got, err)
		}
	}
	if Event(42).Name() != "Event(42)" {
		t.Errorf("Name of invalid event = %q", Event(42).Name())
	}
}
