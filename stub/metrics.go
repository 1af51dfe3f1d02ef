package stub

import (
	"sync"
	"time"
)

// Metric names of the registry of package stub/stubmetrics (the
// [Observer] that serves a stub's metrics). The handler metrics are
// labelled by handler: an event name ("CreateContainer", ...),
// "Configure", "Synchronize" or "Shutdown".
const (
	// MetricHandlerCalls counts the calls of the plugin's handlers.
	MetricHandlerCalls = "nri_stub_handler_calls_total"
	// MetricHandlerErrors counts the handler calls that returned an
	// error (a validator's rejection included, opt-outs excluded) or
	// panicked.
	MetricHandlerErrors = "nri_stub_handler_errors_total"
	// MetricHandlerSeconds is the time the handlers took.
	MetricHandlerSeconds = "nri_stub_handler_duration_seconds"
	// MetricConnectionState is 1 for the stub's current state, labelled
	// state: "connecting" (connecting, registering or waiting to
	// reconnect), "registered" or "stopped", and 0 for the others.
	MetricConnectionState = "nri_stub_connection_state"
	// MetricRegistrations counts the successful registrations with the
	// runtime, the first one included.
	MetricRegistrations = "nri_stub_registrations_total"
	// MetricReconnects counts the successful re-registrations after a
	// lost connection (see [WithReconnect]).
	MetricReconnects = "nri_stub_reconnects_total"
)

// stubMetrics passes what a stub does to its [Observer], telling it of
// each change of the connection state once. A nil *stubMetrics (a stub
// without an observer) does nothing.
type stubMetrics struct {
	obs Observer

	mu      sync.Mutex
	current ConnState
}

// observe records a handler call.
func (m *stubMetrics) observe(handler string, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.obs.Handled(handler, took, err)
}

// setState records the connection state.
func (m *stubMetrics) setState(s ConnState) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.current == s {
		return
	}
	m.current = s
	m.obs.StateChanged(s)
}

// registered records a successful registration; again says it followed
// a lost connection.
func (m *stubMetrics) registered(again bool) {
	if m == nil {
		return
	}
	m.obs.Registered(again)
	m.setState(StateRegistered)
}
