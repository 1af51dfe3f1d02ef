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
	// Policy is the policy of plugin grants the runtime enforced; nil
	// for none (every plugin may change everything).
	Policy *Policy `json:"policy"`
	// OK is true if every step had the expected outcome, every plugin
	// registered and none was lost.
	OK bool `json:"ok"`
	// Failures describe the steps that did not, then the plugins that
	// did not register and those lost.
	Failures []string `json:"failures"`
	// Plugins are the plugins that registered, in invocation order,
	// those lost during the run included.
	Plugins []Plugin `json:"plugins"`
	// RegistrationErrors are the plugins the runtime refused before they
	// registered, with the reason.
	RegistrationErrors []RegistrationError `json:"registrationErrors"`
	// Lost are the plugins the runtime lost after they registered (they
	// timed out, crashed or closed their connection), with what happened.
	Lost []Lost `json:"lost"`
	// Events are the lifecycle events, in order.
	Events []Event `json:"events"`
	// Containers are the scenario's containers, in definition order.
	Containers []Container `json:"containers"`
	// DurationMs is the time the steps took, in milliseconds.
	DurationMs float64 `json:"durationMs"`
}

// Policy is the policy of plugin grants in force.
type Policy struct {
	// Source is where it comes from: "scenario" (the scenario's policy:)
	// or "--policy" (a file given on the command line).
	Source string `json:"source"`
	// File is the file it was read from: the scenario file, or the
	// --policy file.
	File string `json:"file"`
	// Line is the line of the scenario's policy: key (0 for a file of its
	// own).
	Line int `json:"line"`
}

// String says where the policy is, "FILE" or "FILE:LINE".
func (p *Policy) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
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
	// Errors counts the requests it failed, its answers the runtime
	// refused included.
	Errors int `json:"errors"`
	// Refused counts its answers the runtime refused (of Errors).
	Refused int `json:"refused"`
	// Audited counts its answers the policy does not allow but the
	// runtime used, its grant being in audit mode (not of Errors).
	Audited int `json:"audited"`
	// State is "registered", or "lost" if the runtime lost it during the
	// run (see Report.Lost).
	State string `json:"state"`
	// Grant is the plugin's grant under the policy in force, as the
	// policy names it ("default.yaml:118: grants[2]", "policy.yaml: no
	// default grant"); "" without a policy.
	Grant string `json:"grant"`
	// GrantNotes point out grants and required entries of the policy
	// that name the plugin without the extension of its file name, and
	// so are not its (a WASM plugin 50-x.wasm is x.wasm).
	GrantNotes []string `json:"grantNotes"`
}

// The states of a Plugin.
const (
	StateRegistered = "registered"
	StateLost       = "lost"
)

// Lost is a plugin the runtime lost after it registered.
type Lost struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string `json:"plugin"`
	// Step is the scenario step during which it was lost (0 if not
	// during a step).
	Step int `json:"step"`
	// Event is the event whose request it failed ("" if none).
	Event string `json:"event"`
	// Reason says what happened: the failed request and why the runtime
	// dropped the plugin.
	Reason string `json:"reason"`
}

// When says when the plugin was lost: "at step 3 (CreateContainer)".
func (l Lost) When() string { return lostWhen(l) }

// RegistrationError is a plugin the runtime refused before it
// registered.
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
	// Error is the plugin's error, or why its answer was refused ("" if
	// it answered and the answer was used).
	Error string `json:"error"`
	// Refused is set if the plugin answered but the runtime refused the
	// answer: none of its changes were applied.
	Refused bool `json:"refused"`
	// Audited is set if the policy does not allow the answer's changes
	// but the plugin's grant is in audit mode: the runtime applied them
	// (Error stays "": the call did not fail).
	Audited bool `json:"audited"`
	// Violations are the changes of the answer the policy does not
	// allow.
	Violations []Violation `json:"violations"`
	// Expected is set for a refusal the step expected (expectRefused).
	Expected bool `json:"expected"`
}

// Violation is one change of a plugin's answer that its grant under the
// policy does not allow.
type Violation struct {
	// Field is the kind of change, the policy's field name ("env",
	// "mounts", "rlimits", ...).
	Field string `json:"field"`
	// Value is the change, quoted.
	Value string `json:"value"`
	// Reason says why the rule does not allow it.
	Reason string `json:"reason"`
	// Rule is where the deciding rule is, "FILE:LINE: grants[N].adjust.KEY".
	Rule string `json:"rule"`
	// Action is what the runtime did about it: "refused" (the answer was
	// not used) or "audited" (the grant is in audit mode: the change was
	// applied).
	Action string `json:"action"`
}

// The values of Violation.Action.
const (
	// ActionRefused is the Action of a violation whose answer was refused.
	ActionRefused = "refused"
	// ActionAudited is the Action of a violation a grant in audit mode
	// let through.
	ActionAudited = "audited"
)

// String returns "FIELD VALUE denied: REASON (RULE)", as the policy
// words a violation ("would be denied" if it was audited).
func (v Violation) String() string {
	verb := "denied"
	if v.Action == ActionAudited {
		verb = "would be denied"
	}
	return fmt.Sprintf("%s %s %s: %s (%s)", v.Field, v.Value, verb, v.Reason, v.Rule)
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
	// Refused is true if the change was part of an answer the runtime
	// refused: it was not applied.
	Refused bool `json:"refused"`
	// Audited is true if the change was part of an answer the policy
	// does not allow, applied because the plugin's grant is in audit
	// mode.
	Audited bool `json:"audited"`
}

// Container is one container of the scenario and its final OCI spec.
type Container struct {
	// Pod is the pod's name, Namespace its namespace.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	// Name is the container's name, ID its ID.
	Name string `json:"name"`
	ID   string `json:"id"`
	// State is the container's state at the end: "created", "running",
	// "stopped", "removed", "failed" (creation failed) or "not created".
	State string `json:"state"`
	// UpdatedBy are the steps that updated the container's resources
	// (updateContainer): the diff holds their changes as well as the
	// plugins'.
	UpdatedBy []int `json:"updatedBy"`
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
	c.Lost = nonNil(c.Lost)
	c.Events = make([]Event, len(r.Events))
	for i, e := range r.Events {
		e.Called, e.Filtered = nonNil(e.Called), nonNil(e.Filtered)
		e.Calls, e.Changes = slices.Clone(nonNil(e.Calls)), nonNil(e.Changes)
		for j := range e.Calls {
			e.Calls[j].Violations = nonNil(e.Calls[j].Violations)
		}
		c.Events[i] = e
	}
	c.Containers = make([]Container, len(r.Containers))
	for i, ctr := range r.Containers {
		ctr.Env, ctr.Diff, ctr.UpdatedBy = nonNil(ctr.Env), nonNil(ctr.Diff), nonNil(ctr.UpdatedBy)
		c.Containers[i] = ctr
	}
	for i := range c.Plugins {
		c.Plugins[i].Events = nonNil(c.Plugins[i].Events)
		c.Plugins[i].GrantNotes = nonNil(c.Plugins[i].GrantNotes)
	}
	return &c
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
