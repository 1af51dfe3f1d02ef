package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/ocispec"
)

// Replay is the result of `nri replay`: a recorded node's traffic played
// through a plugin set, compared container by container with what the
// node got, or with what another plugin set produced. Its JSON form is
// the `--output json` document of `nri replay` (docs/record.md).
type Replay struct {
	// Recording names the files replayed.
	Recording []string `json:"recording"`
	// Source is who recorded: "plugin" or "runtime".
	Source string `json:"source"`
	// Runtime is the recorded runtime's name and version.
	Runtime string `json:"runtime"`
	// Node is the recorded node's host name.
	Node string `json:"node"`
	// Against is what the plugin set was compared with: "node" (what
	// the recorded node got) or "base" (the base plugin set).
	Against string `json:"against"`
	// Plugins are the plugins replayed, and BasePlugins those of the
	// base set (with Against "base").
	Plugins     []Plugin `json:"plugins"`
	BasePlugins []Plugin `json:"basePlugins"`
	// RegistrationErrors are the plugins that did not register.
	RegistrationErrors []RegistrationError `json:"registrationErrors"`
	// Summary counts what was replayed and what would differ.
	Summary ReplaySummary `json:"summary"`
	// Containers are the containers created in the recording, in the
	// order of their creation.
	Containers []ReplayContainer `json:"containers"`
	// Warnings are what limits the comparison (records dropped, a
	// recording cut short, values redacted without a key).
	Warnings []string `json:"warnings"`
}

// ReplaySummary counts what a replay saw and what would differ.
type ReplaySummary struct {
	// Events counts the recorded events replayed.
	Events int `json:"events"`
	// Pods and Containers count those created in the recording;
	// Existing those that existed before it (its snapshot, not
	// compared).
	Pods       int `json:"pods"`
	Containers int `json:"containers"`
	Existing   int `json:"existing"`
	// Changes counts the UpdateContainer and StopContainer events
	// compared.
	Changes int `json:"changes"`
	// Differ counts the containers whose creation would differ,
	// ChangesDiffer the UpdateContainer and StopContainer events whose
	// result would.
	Differ        int `json:"differ"`
	ChangesDiffer int `json:"changesDiffer"`
	// ByField counts the entries (creations and changes) that would
	// differ, per field.
	ByField []Count `json:"byField"`
	// ByPlugin counts the entries that would differ per plugin: with the
	// plugins' own answers (a runtime's recording, or a base set), the
	// plugins whose answer would differ; otherwise the plugins that
	// changed (or failed) them in the replay.
	ByPlugin []Count `json:"byPlugin"`
}

// Count is a number of containers for a name.
type Count struct {
	Name       string `json:"name"`
	Containers int    `json:"containers"`
}

// ReplayContainer is one container created in the recording (Event
// CreateContainer), or one UpdateContainer or StopContainer event's
// result for one container.
type ReplayContainer struct {
	// Event is CreateContainer, UpdateContainer or StopContainer; Seq the
	// sequence number of the event's record in the recording.
	Event string `json:"event"`
	Seq   uint64 `json:"seq"`
	// Name is NAMESPACE/POD/CONTAINER, ID the container's ID (of a
	// change: the container whose resources it sets, which a
	// StopContainer's plugins may ask for another container).
	Name string `json:"name"`
	ID   string `json:"id"`
	// Differs is true if the replay's outcome is not the node's (or the
	// base set's).
	Differs bool `json:"differs"`
	// Changes are the fields that would differ: Old is the node's (or
	// the base set's) value, New the replayed plugins'.
	Changes []ocispec.Change `json:"changes"`
	// Error is why the replayed creation failed; Was why it failed on
	// the node (or with the base set); "" for a creation that succeeded.
	Error string `json:"error"`
	Was   string `json:"was"`
	// Plugins are the replayed plugins that changed the container or
	// failed it.
	Plugins []string `json:"plugins"`
	// Answers compare the plugins' own answers (CreateContainer, with a
	// runtime's recording or a base set), for each plugin on both sides,
	// by name.
	Answers []PluginAnswer `json:"answers"`
	// Basis says what the node's outcome was taken from:
	// "validation" (the container as proposed and the combined
	// adjustment, from ValidateContainerAdjustment), "answers" (the
	// plugins' recorded answers), "created" (PostCreateContainer's
	// container) or "base" (the base plugin set's replay).
	Basis string `json:"basis"`
}

// PluginAnswer compares one plugin's answer in the replay with its
// answer on the node (or in the base set).
type PluginAnswer struct {
	// Plugin is the replayed plugin's full name (IDX-NAME), WasName the
	// name it had on the other side if that differs.
	Plugin  string `json:"plugin"`
	WasName string `json:"wasName,omitempty"`
	// Differs is true if the answers differ.
	Differs bool `json:"differs"`
	// Changes are the fields the two answers set differently (each
	// answer applied alone to the proposed container): Old the node's,
	// New the replay's.
	Changes []ocispec.Change `json:"changes"`
	// Error and Was are how the plugin failed in the replay and on the
	// node ("" if it answered).
	Error string `json:"error"`
	Was   string `json:"was"`
	// Refused are the fields of its answer the node's policy refused.
	Refused []string `json:"refused"`
}

// Tally fills the summary's counts of differences from the containers.
func (r *Replay) Tally() {
	byField, byPlugin := map[string]int{}, map[string]int{}
	s := &r.Summary
	s.Containers, s.Changes, s.Differ, s.ChangesDiffer = 0, 0, 0, 0
	for _, c := range r.Containers {
		if c.Event == "CreateContainer" {
			s.Containers++
		} else {
			s.Changes++
		}
		if !c.Differs {
			continue
		}
		if c.Event == "CreateContainer" {
			s.Differ++
		} else {
			s.ChangesDiffer++
		}
		fields := map[string]bool{}
		for _, ch := range c.Changes {
			fields[ch.Path] = true
		}
		if c.Error != c.Was {
			fields["("+c.Event+" outcome)"] = true
		}
		for f := range fields {
			byField[f]++
		}
		plugins := c.Plugins
		if c.Answers != nil {
			plugins = nil
			for _, a := range c.Answers {
				if a.Differs {
					plugins = append(plugins, a.Plugin)
				}
			}
		}
		for _, p := range plugins {
			byPlugin[p]++
		}
	}
	r.Summary.ByField, r.Summary.ByPlugin = counts(byField), counts(byPlugin)
}

// counts sorts a tally, most first.
func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Count{Name: k, Containers: m[k]})
	}
	slices.SortStableFunc(out, func(a, b Count) int { return b.Containers - a.Containers })
	return out
}

// WriteJSON writes the replay as one indented JSON document, with empty
// lists as [] rather than null.
func (r *Replay) WriteJSON(w io.Writer) error {
	c := *r
	c.Recording = nonNil(c.Recording)
	c.Plugins, c.BasePlugins = nonNil(c.Plugins), nonNil(c.BasePlugins)
	c.RegistrationErrors, c.Warnings = nonNil(c.RegistrationErrors), nonNil(c.Warnings)
	c.Summary.ByField, c.Summary.ByPlugin = nonNil(c.Summary.ByField), nonNil(c.Summary.ByPlugin)
	c.Containers = make([]ReplayContainer, len(r.Containers))
	for i, ct := range r.Containers {
		ct.Changes, ct.Plugins = nonNil(ct.Changes), nonNil(ct.Plugins)
		ct.Answers = slices.Clone(nonNil(ct.Answers))
		for j, a := range ct.Answers {
			a.Changes, a.Refused = nonNil(a.Changes), nonNil(a.Refused)
			ct.Answers[j] = a
		}
		c.Containers[i] = ct
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&c)
}

// WriteText writes the replay for a person: the summary first, then the
// containers that would differ, field by field; with all, every
// container.
func (r *Replay) WriteText(w io.Writer, all bool) error {
	var b strings.Builder
	against := "what the node got"
	if r.Against == "base" {
		against = "the base plugin set"
	}
	fmt.Fprintf(&b, "replay of %s (%s recording", strings.Join(r.Recording, ", "), r.Source)
	if r.Runtime != "" {
		fmt.Fprintf(&b, " of %s", r.Runtime)
	}
	if r.Node != "" {
		fmt.Fprintf(&b, " on %s", r.Node)
	}
	fmt.Fprintf(&b, ") against %s\n", against)
	fmt.Fprintf(&b, "plugins: %s\n", pluginNames(r.Plugins))
	if r.Against == "base" {
		fmt.Fprintf(&b, "base plugins: %s\n", pluginNames(r.BasePlugins))
	}
	for _, e := range r.RegistrationErrors {
		fmt.Fprintf(&b, "plugin %s did not register: %s\n", e.Plugin, e.Reason)
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d event(s), %d pod(s) and %d container(s) created (%d existing before the recording, not compared)",
		s.Events, s.Pods, s.Containers, s.Existing)
	if s.Changes > 0 {
		fmt.Fprintf(&b, ", %d update(s) and stop(s) compared", s.Changes)
	}
	b.WriteString("\n")
	if s.Differ+s.ChangesDiffer == 0 {
		fmt.Fprintf(&b, "no container would differ\n")
	} else {
		fmt.Fprintf(&b, "%d of %d container(s) would differ", s.Differ, s.Containers)
		if s.Changes > 0 {
			fmt.Fprintf(&b, ", and %d of %d update(s) and stop(s)", s.ChangesDiffer, s.Changes)
		}
		b.WriteString("\n")
		if len(s.ByField) > 0 {
			fmt.Fprintf(&b, "  by field:")
			for _, c := range s.ByField {
				fmt.Fprintf(&b, " %s (%d)", c.Name, c.Containers)
			}
			b.WriteString("\n")
		}
		if len(s.ByPlugin) > 0 {
			fmt.Fprintf(&b, "  by plugin:")
			for _, c := range s.ByPlugin {
				fmt.Fprintf(&b, " %s (%d)", c.Name, c.Containers)
			}
			b.WriteString("\n")
		}
	}
	for _, c := range r.Containers {
		if !c.Differs && !all {
			continue
		}
		mark := "="
		if c.Differs {
			mark = "≠"
		}
		fmt.Fprintf(&b, "\n%s %s (%s)", mark, c.Name, c.ID)
		if c.Event != "CreateContainer" {
			fmt.Fprintf(&b, " %s (record %d)", c.Event, c.Seq)
		}
		if len(c.Plugins) > 0 {
			fmt.Fprintf(&b, " changed by %s", strings.Join(c.Plugins, ", "))
		}
		b.WriteString("\n")
		writeOutcome(&b, "    ", c.Error, c.Was)
		for _, ch := range c.Changes {
			fmt.Fprintf(&b, "    %s\n", ch)
		}
		for _, a := range c.Answers {
			if !a.Differs {
				continue
			}
			fmt.Fprintf(&b, "    %s's answer", a.Plugin)
			if a.WasName != "" {
				fmt.Fprintf(&b, " (on the other side: %s)", a.WasName)
			}
			if len(a.Refused) > 0 {
				fmt.Fprintf(&b, " (the node's policy refused its %s)", strings.Join(a.Refused, ", "))
			}
			b.WriteString(":\n")
			writeOutcome(&b, "      ", a.Error, a.Was)
			for _, ch := range a.Changes {
				fmt.Fprintf(&b, "      %s\n", ch)
			}
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "\nwarning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeOutcome writes how a replayed outcome's failure differs from the
// other side's.
func writeOutcome(b *strings.Builder, indent, got, was string) {
	switch {
	case got != "" && was == "":
		fmt.Fprintf(b, "%swould fail: %s\n", indent, got)
	case got == "" && was != "":
		fmt.Fprintf(b, "%swould succeed; failed with: %s\n", indent, was)
	case got != was:
		fmt.Fprintf(b, "%swould fail with: %s\n%sfailed with: %s\n", indent, got, indent, was)
	}
}

func pluginNames(ps []Plugin) string {
	if len(ps) == 0 {
		return "none"
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.ID
	}
	return strings.Join(names, ", ")
}
