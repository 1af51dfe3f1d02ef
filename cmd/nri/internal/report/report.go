// Package report is the result of playing a scenario with the nri
// command's runtime simulator: which plugins took part, what happened at
// every lifecycle event, and every container's final OCI spec. It renders
// the result as a readable text timeline or as one JSON document whose
// keys are stable (documented in docs/cli.md).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	rspec "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/nrikit/nrikit/ocispec"
)

// Report is the result of one scenario run. Its JSON form is the
// `--output json` document of `nri run` and `nri serve`.
type Report struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Runtime is the simulated runtime's name and version.
	Runtime string `json:"runtime"`
	// OK is true if every step had the expected outcome.
	OK bool `json:"ok"`
	// Failures describe the steps that did not.
	Failures []string `json:"failures"`
	// Plugins are the plugins that registered, in invocation order.
	Plugins []Plugin `json:"plugins"`
	// RegistrationErrors are the plugins the runtime refused or lost
	// before the scenario ended, with the reason.
	RegistrationErrors []RegistrationError `json:"registrationErrors"`
	// Events are the lifecycle events, in order.
	Events []Event `json:"events"`
	// Containers are the scenario's containers, in definition order.
	Containers []Container `json:"containers"`
	// DurationMs is the time the steps took, in milliseconds.
	DurationMs float64 `json:"durationMs"`
}

// Plugin is one plugin that took part.
type Plugin struct {
	// Name is the plugin's name, without index.
	Name string `json:"name"`
	// Index is its two-digit index.
	Index string `json:"index"`
	// ID is IDX-NAME.
	ID string `json:"id"`
	// Kind is "builtin", "pre-installed" or "external".
	Kind string `json:"kind"`
	// PID is the plugin's process ID (0 for builtin plugins).
	PID int `json:"pid"`
	// Events are the events it subscribed to.
	Events []string `json:"events"`
	// Calls counts the requests it was sent.
	Calls int `json:"calls"`
	// Filtered counts the events it subscribed to but was not sent,
	// because of its scope or because it opted out of the pod or
	// container.
	Filtered int `json:"filtered"`
	// Errors counts the requests it failed.
	Errors int `json:"errors"`
}

// RegistrationError is a plugin the runtime refused or lost.
type RegistrationError struct {
	// Plugin is the plugin's IDX-NAME, or its file name.
	Plugin string `json:"plugin"`
	// Reason says why.
	Reason string `json:"reason"`
}

// Event is one lifecycle event as the simulated runtime delivered it.
type Event struct {
	// Step is the scenario step (1-based) the event belongs to; 0 for
	// events no step caused (unsolicited updates).
	Step int `json:"step"`
	// Event is the event's name, such as "CreateContainer".
	Event string `json:"event"`
	// Pod is the pod's name, Namespace its namespace.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	// Container is the container's name ("" for pod events).
	Container string `json:"container"`
	// Called are the plugins that were sent the event (IDX-NAME), in
	// order.
	Called []string `json:"called"`
	// Filtered are the plugins subscribed to the event that were not sent
	// it (scope or opt-out).
	Filtered []string `json:"filtered"`
	// Calls are the individual plugin requests.
	Calls []Call `json:"calls"`
	// Changes are what the plugins changed, field by field.
	Changes []Change `json:"changes"`
	// Error is the event's error ("" if it succeeded).
	Error string `json:"error"`
	// ExpectedError is the error text the step expected ("" for none).
	ExpectedError string `json:"expectedError"`
	// OK is true if the outcome was the expected one.
	OK bool `json:"ok"`
	// LatencyMs is the time the runtime spent in the event, in
	// milliseconds.
	LatencyMs float64 `json:"latencyMs"`
}

// Call is one request to one plugin.
type Call struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string `json:"plugin"`
	// LatencyMs is the request's round trip, in milliseconds.
	LatencyMs float64 `json:"latencyMs"`
	// Error is the plugin's error ("" if it answered).
	Error string `json:"error"`
}

// Change is one field a plugin set.
type Change struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string `json:"plugin"`
	// Container is the changed container's name (for updates of other
	// containers, not the event's).
	Container string `json:"container"`
	// Field names the field, such as "env[FOO]", "mounts[/data]",
	// "linux.resources.memory.limit".
	Field string `json:"field"`
	// Value is the new value ("" for a removal).
	Value string `json:"value"`
	// Removed is true if the plugin removed the field.
	Removed bool `json:"removed"`
}

// Container is one container of the scenario and its final OCI spec.
type Container struct {
	// Pod is the pod's name, Namespace its namespace.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	// Name is the container's name, ID its ID.
	Name string `json:"name"`
	ID   string `json:"id"`
	// State is "created", "running", "stopped", "removed", "failed"
	// (creation failed) or "not created".
	State string `json:"state"`
	// Error is why the creation failed.
	Error string `json:"error"`
	// Env is the final process environment (KEY=VALUE).
	Env []string `json:"env"`
	// Spec is the final OCI spec (for a container whose creation failed,
	// the spec it was proposed with).
	Spec *rspec.Spec `json:"spec"`
	// Diff are the changes from the proposed to the final spec.
	Diff []ocispec.Change `json:"diff"`
}

// WriteJSON writes r as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.normalized()); err != nil {
		return fmt.Errorf("report: encoding JSON: %w", err)
	}
	return nil
}

// normalized returns a copy with empty lists instead of nil ones, so that
// every documented key holds an array in JSON.
func (r *Report) normalized() *Report {
	c := *r
	c.Failures = nonNil(c.Failures)
	c.Plugins = nonNil(slices.Clone(c.Plugins))
	c.RegistrationErrors = nonNil(c.RegistrationErrors)
	c.Events = make([]Event, len(r.Events))
	for i, e := range r.Events {
		e.Called, e.Filtered = nonNil(e.Called), nonNil(e.Filtered)
		e.Calls, e.Changes = nonNil(e.Calls), nonNil(e.Changes)
		c.Events[i] = e
	}
	c.Containers = make([]Container, len(r.Containers))
	for i, ctr := range r.Containers {
		ctr.Env, ctr.Diff = nonNil(ctr.Env), nonNil(ctr.Diff)
		c.Containers[i] = ctr
	}
	for i := range c.Plugins {
		c.Plugins[i].Events = nonNil(c.Plugins[i].Events)
	}
	return &c
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
