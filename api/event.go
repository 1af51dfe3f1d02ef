package api

import (
	"fmt"
	"strings"
)

// EventMask is a set of [Event] values: the bit for event E is 1 << (E-1).
// It is the int32 carried in ConfigureResponse.events and, as nrikit's
// extension, ConfigureRequest.supported_events.
type EventMask int32

const (
	// AllEvents is the mask of every event defined by the protocol
	// (RunPodSandbox through ValidateContainerAdjustment).
	AllEvents EventMask = 1<<(Event_LAST-1) - 1

	// ContainerEvents is the mask of the container lifecycle events,
	// including ValidateContainerAdjustment. PodEvents and
	// StateChangeEvents are in events_generated.go.
	ContainerEvents = AllEvents &^ PodEvents
)

// Events returns every event defined by the protocol, in enum order.
func Events() []Event {
	all := make([]Event, 0, Event_LAST-1)
	for e := Event_UNKNOWN + 1; e < Event_LAST; e++ {
		all = append(all, e)
	}
	return all
}

// IsValid reports whether e is one of the protocol's events (not UNKNOWN,
// not LAST, not out of range).
func (e Event) IsValid() bool {
	return e > Event_UNKNOWN && e < Event_LAST
}

// Name returns the event's name as used in RPC method names, such as
// "CreateContainer", or "Event(99)" for a value that is not an event.
func (e Event) Name() string {
	if e.IsValid() {
		return eventTable[e].Name
	}
	return fmt.Sprintf("Event(%d)", int32(e))
}

// Mask returns the mask holding only e, or 0 if e is not an event.
func (e Event) Mask() EventMask {
	if !e.IsValid() {
		return 0
	}
	return 1 << (e - 1)
}

// ParseEvent parses an event name, case-insensitively; both the method
// name ("CreateContainer") and the enum name ("CREATE_CONTAINER") are
// accepted.
func ParseEvent(name string) (Event, error) {
	key := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", ""))
	for e := Event_UNKNOWN + 1; e < Event_LAST; e++ {
		if strings.ToLower(eventTable[e].Name) == key {
			return e, nil
		}
	}
	return Event_UNKNOWN, fmt.Errorf("unknown event %q", name)
}

// ParseEventMask parses comma-separated event names into a mask. Besides
// event names it accepts "all", "pod" (or "podsandbox": every pod event)
// and "container" (every container event). Several arguments are joined as
// if separated by commas. Empty items are ignored.
func ParseEventMask(events ...string) (EventMask, error) {
	var mask EventMask
	for _, arg := range events {
		for _, item := range strings.Split(arg, ",") {
			item = strings.TrimSpace(item)
			switch strings.ToLower(item) {
			case "":
				continue
			case "all":
				mask |= AllEvents
			case "pod", "podsandbox":
				mask |= PodEvents
			case "container":
				mask |= ContainerEvents
			default:
				e, err := ParseEvent(item)
				if err != nil {
					return 0, fmt.Errorf("parsing event mask %q: %w", arg, err)
				}
				mask |= e.Mask()
			}
		}
	}
	return mask, nil
}

// MustParseEventMask is like [ParseEventMask] but panics on error; use it
// only with constant input.
func MustParseEventMask(events ...string) EventMask {
	m, err := ParseEventMask(events...)
	if err != nil {
		panic(err)
	}
	return m
}

// MaskOf returns the mask holding the given events.
func MaskOf(events ...Event) EventMask {
	var m EventMask
	return m.Set(events...)
}

// Set returns m with the given events added.
func (m EventMask) Set(events ...Event) EventMask {
	for _, e := range events {
		m |= e.Mask()
	}
	return m
}

// Clear returns m with the given events removed.
func (m EventMask) Clear(events ...Event) EventMask {
	for _, e := range events {
		m &^= e.Mask()
	}
	return m
}

// IsSet reports whether e is in m.
func (m EventMask) IsSet(e Event) bool {
	return e.IsValid() && m&e.Mask() != 0
}

// Unknown returns the bits of m that correspond to no event.
func (m EventMask) Unknown() EventMask {
	return m &^ AllEvents
}

// Events returns the events in m, in enum order.
func (m EventMask) Events() []Event {
	var out []Event
	for e := Event_UNKNOWN + 1; e < Event_LAST; e++ {
		if m.IsSet(e) {
			out = append(out, e)
		}
	}
	return out
}

// String returns the events in m as comma-separated names, with any
// unknown bits appended as "unknown(0x...)"; an empty mask is "none".
func (m EventMask) String() string {
	var b strings.Builder
	for _, e := range m.Events() {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.Name())
	}
	if u := m.Unknown(); u != 0 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "unknown(0x%x)", uint32(u))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
