package api

// EventKind says how a runtime delivers an event to its plugins.
type EventKind uint8

const (
	// EventNotification: the plugins are told of what happened; their
	// answers carry nothing and their failures fail nothing.
	EventNotification EventKind = iota + 1
	// EventMutating: the runtime asks its plugins one after the other
	// before it acts, and an answer may change or fail what happens.
	EventMutating
	// EventValidating: the plugins accept or reject the combined answers
	// of the mutating ones.
	EventValidating
)

// String returns "notification", "mutating" or "validating".
func (k EventKind) String() string {
	switch k {
	case EventNotification:
		return "notification"
	case EventMutating:
		return "mutating"
	case EventValidating:
		return "validating"
	}
	return "EventKind(?)"
}

// EventInfo is what the protocol says of one event: one row of the event
// table, which is generated from proto/nrikit/nri.proto (enum Event and
// the Plugin service; see tools/protoc-gen-nrievents).
type EventInfo struct {
	// Name is the event's name and its Plugin service method's,
	// "CreateContainer".
	Name string
	// Kind is how the runtime delivers it.
	Kind EventKind
	// Pod is set for a pod event (its request has no container).
	Pod bool
	// Since is the first NRI release (or Go pseudo-version of upstream's
	// module) that delivers it.
	Since string
	// StateChange is set if NRI v0.11 and earlier deliver it through
	// StateChange ([StateChangeEvents]).
	StateChange bool
	// WASMExport is the function a WASM plugin module exports for it
	// (docs/wasm-abi.md).
	WASMExport string
	// Request and Response are the full protobuf names of its method's
	// request and response.
	Request, Response string
}

// Info returns e's row of the event table (the zero EventInfo if e is not
// an event).
func (e Event) Info() EventInfo {
	if !e.IsValid() {
		return EventInfo{}
	}
	return eventTable[e]
}
