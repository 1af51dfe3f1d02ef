package stub

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ConnState is a stub's connection state, as its [Observer] sees it.
type ConnState int32

const (
	// StateIdle: not started.
	StateIdle ConnState = iota
	// StateConnecting: connecting, registering or waiting to reconnect.
	StateConnecting
	// StateRegistered: registered with the runtime.
	StateRegistered
	// StateStopped: stopped, or gave up.
	StateStopped
)

// String returns "idle", "connecting", "registered" or "stopped".
func (s ConnState) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateConnecting:
		return "connecting"
	case StateRegistered:
		return "registered"
	case StateStopped:
		return "stopped"
	}
	return fmt.Sprintf("ConnState(%d)", int32(s))
}

// Observer watches a [Stub]: its handler calls and its connection. Package
// stub/stubmetrics is one, which serves Prometheus metrics (see the
// Metric constants) and health endpoints:
//
//	m, err := stubmetrics.New("127.0.0.1:9090")
//	...
//	st, err := stub.New(plugin, stub.WithObserver(m))
//
// A stub without an observer links no metrics library and no HTTP
// server (the plugin process stays as light as upstream's), which is why
// they are not part of this package.
//
// The stub calls the methods from its own goroutines, some of them
// concurrently: they must be safe for that and return quickly, as
// Handled and StateChanged are called on the path of the runtime's
// requests.
type Observer interface {
	// Start is called when [Stub.Start] begins, once the state is
	// StateConnecting; an error fails Start. plugin is the plugin's
	// IDX-NAME, log the stub's logger. After a successful Start, Stop is
	// called once before the next Start.
	Start(plugin string, log *slog.Logger) error
	// Stop is called when the stub is done: by [Stub.Stop], at the end of
	// [Stub.Run], or when Start fails after the observer started. It
	// returns once what Start started has stopped.
	Stop()
	// Handled is called after each call of a handler (an event name such
	// as "CreateContainer", "Configure", "Synchronize" or "Shutdown") with
	// the time it took and its error, nil when it succeeded.
	Handled(handler string, took time.Duration, err error)
	// StateChanged is called when the connection state changes.
	StateChanged(s ConnState)
	// Registered is called after each successful registration with the
	// runtime; again says it followed a lost connection ([WithReconnect]).
	Registered(again bool)
}

// WithObserver gives the stub an observer (see [Observer]), from
// [Stub.Start] until [Stub.Stop] or the end of [Stub.Run]. The option has
// no effect for [NewBuiltin].
func WithObserver(o Observer) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("stub: WithObserver: nil observer")
		}
		c.observer = o
		return nil
	}
}

// IsOptOut reports whether err is a handler's opt-out
// ([ErrNotInterestedInPod], [ErrNotInterestedInContainer]) rather than a
// failure, for an [Observer] that counts failures.
func IsOptOut(err error) bool {
	return errors.Is(err, ErrNotInterestedInPod) || errors.Is(err, ErrNotInterestedInContainer)
}

// startHealth starts the observer, unless there is none or it is already
// started (by a previous lifetime not yet stopped).
func (st *Stub) startHealth() error {
	m := st.c.metrics
	if m == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.observing {
		return nil
	}
	if err := m.obs.Start(st.c.name, st.c.log); err != nil {
		return fmt.Errorf("stub: starting the observer: %w", err)
	}
	st.observing = true
	return nil
}

// stopHealth stops the observer and waits until it is done.
func (st *Stub) stopHealth() {
	st.mu.Lock()
	m, on := st.c.metrics, st.observing
	st.observing = false
	st.mu.Unlock()
	if on {
		m.obs.Stop()
	}
}
