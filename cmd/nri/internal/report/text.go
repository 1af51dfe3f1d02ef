package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/nrikit/nrikit/ocispec"
)

// TextOptions controls the text rendering.
type TextOptions struct {
	// Color enables ANSI colours (only for terminals).
	Color bool
	// Calls adds every plugin request with its latency.
	Calls bool
}

// palette holds the ANSI sequences of the text rendering ("" without
// colour).
type palette struct{ bold, dim, red, green, yellow, cyan, reset string }

func newPalette(on bool) palette {
	if !on {
		return palette{}
	}
	return palette{bold: "\x1b[1m", dim: "\x1b[2m", red: "\x1b[31m", green: "\x1b[32m", yellow: "\x1b[33m", cyan: "\x1b[36m", reset: "\x1b[0m"}
}

func (p palette) paint(color, s string) string {
	if color == "" {
		return s
	}
	return color + s + p.reset
}

// textWriter accumulates the first write error.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// WriteText renders r readably: the plugins, the timeline of events with
// what each plugin changed, each container's final OCI spec as a diff
// against the proposed one, and the result.
func (r *Report) WriteText(w io.Writer, opts TextOptions) error {
	p := newPalette(opts.Color)
	t := &textWriter{w: w}
	t.printf("%s %s (runtime %s)\n", p.paint(p.bold, "NRI scenario"), p.paint(p.bold, fmt.Sprintf("%q", r.Scenario)), r.Runtime)
	switch {
	case r.Policy == nil:
		t.printf("policy: none (every plugin may change everything)\n\n")
	case r.Policy.Source == "scenario":
		t.printf("policy: the scenario's, %s\n\n", r.Policy)
	default:
		t.printf("policy: %s (%s)\n\n", r.Policy, r.Policy.Source)
	}
	r.writePlugins(t, p)
	r.writeTimeline(t, p, opts)
	r.writeContainers(t, p)
	r.writeResult(t, p)
	return t.err
}

func (r *Report) writePlugins(t *textWriter, p palette) {
	t.printf("%s\n", p.paint(p.bold, "PLUGINS"))
	width := 0
	for _, pl := range r.Plugins {
		width = max(width, len(pl.ID))
	}
	indent := strings.Repeat(" ", width+4)
	for _, pl := range r.Plugins {
		pid := ""
		if pl.PID != 0 {
			pid = fmt.Sprintf("pid %d", pl.PID)
		}
		grant := ""
		if r.Policy != nil {
			grant = "  " + p.paint(p.dim, "grant "+grantName(pl.Grant, r.Policy.File))
		}
		t.printf("  %s  %-13s %-10s %3d calls, %d filtered%s%s\n", p.paint(p.cyan, pad(pl.ID, width)), pl.Kind, pid,
			pl.Calls, pl.Filtered, errorCount(p, pl.Errors, pl.Refused)+auditCount(p, pl.Audited), grant)
		for _, n := range pl.GrantNotes {
			t.printf("%s%s\n", indent, p.paint(p.yellow, fmt.Sprintf("note: %s, not %s: a plugin is named after its file, extension included", n, pl.Name)))
		}
		for _, l := range r.Lost {
			if l.Plugin == pl.ID {
				t.printf("%s%s %s\n", indent, p.paint(p.red, "LOST "+lostWhen(l)+":"), l.Reason)
			}
		}
	}
	if len(r.Plugins) == 0 {
		t.printf("  (none)\n")
	}
	for _, e := range r.RegistrationErrors {
		t.printf("  %s %s\n", p.paint(p.red, e.Plugin+" not registered:"), e.Reason)
	}
	t.printf("\n")
}

// pluginName returns the NAME of IDX-NAME.
func pluginName(full string) string {
	_, name, _ := strings.Cut(full, "-")
	return name
}

// grantName shortens a grant's name ("FILE:LINE: grants[2]") for the
// PLUGINS list, under a header that names the policy's file: "grants[2]
// (line 120)", "none (may change nothing)".
func grantName(grant, file string) string {
	rest, ok := strings.CutPrefix(grant, file+":")
	if !ok {
		return grant
	}
	rest = strings.TrimSpace(rest)
	if rest == "no default grant" {
		return "none (may change nothing)"
	}
	if line, label, ok := strings.Cut(rest, ": "); ok {
		return fmt.Sprintf("%s (line %s)", label, line)
	}
	return rest
}

// lostWhen says when a plugin was lost: "at step 3 (CreateContainer)".
func lostWhen(l Lost) string {
	switch {
	case l.Step == 0:
		return "during the run"
	case l.Event == "":
		return fmt.Sprintf("at step %d", l.Step)
	}
	return fmt.Sprintf("at step %d (%s)", l.Step, l.Event)
}

// errorCount renders a plugin's failed requests, of which refused were
// answers the runtime refused.
func errorCount(p palette, n, refused int) string {
	switch {
	case n == 0:
		return ""
	case refused == n:
		return ", " + p.paint(p.red, fmt.Sprintf("%d refused", n))
	case refused > 0:
		return ", " + p.paint(p.red, fmt.Sprintf("%d failed (%d refused)", n, refused))
	}
	return ", " + p.paint(p.red, fmt.Sprintf("%d failed", n))
}

// auditCount is the plugin line's count of answers a grant in audit mode
// let through.
func auditCount(p palette, n int) string {
	if n == 0 {
		return ""
	}
	return ", " + p.paint(p.yellow, fmt.Sprintf("%d audited", n))
}

func pad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

func (e *Event) subject() string {
	var parts []string
	if e.Namespace != "" {
		parts = append(parts, e.Namespace)
	}
	if e.Pod != "" {
		parts = append(parts, e.Pod)
	}
	if e.Container != "" {
		parts = append(parts, e.Container)
	}
	return strings.Join(parts, "/")
}

func (r *Report) writeTimeline(t *textWriter, p palette, opts TextOptions) {
	t.printf("%s\n", p.paint(p.bold, "TIMELINE"))
	notes := map[string][]string{}
	for _, pl := range r.Plugins {
		notes[pl.ID] = pl.GrantNotes
	}
	for i := range r.Events {
		e := &r.Events[i]
		step := "  "
		if e.Step > 0 {
			step = fmt.Sprintf("%2d", e.Step)
		}
		status := ""
		switch {
		case e.Error != "" && e.ExpectedError != "" && e.OK:
			status = p.paint(p.yellow, "  failed, as expected")
		case !e.OK:
			status = p.paint(p.red, "  UNEXPECTED")
		}
		t.printf("  %s  %-28s %-28s %s%s\n", p.paint(p.dim, step), e.Event, e.subject(),
			p.paint(p.dim, fmt.Sprintf("%7.2fms", e.LatencyMs)), status)
		if len(e.Called) > 0 {
			t.printf("        %s %s\n", p.paint(p.dim, "called  "), strings.Join(e.Called, " "))
		}
		if len(e.Filtered) > 0 {
			t.printf("        %s %s\n", p.paint(p.dim, "filtered"), strings.Join(e.Filtered, " "))
		}
		if opts.Calls {
			for _, c := range e.Calls {
				outcome := c.Error
				switch {
				case c.Refused:
					outcome = "refused: " + outcome
				case c.Audited:
					outcome = "audited (applied)"
				}
				t.printf("        %s %-24s %7.2fms %s\n", p.paint(p.dim, "call    "), c.Plugin, c.LatencyMs, outcome)
			}
		}
		for _, c := range e.Changes {
			t.printf("        %s\n", changeLine(p, c, e.Container))
		}
		writeFailedCalls(t, p, e, notes)
		if e.Error != "" {
			color := p.red
			if e.OK {
				color = p.yellow
			}
			t.printf("        %s %s\n", p.paint(color, "error   "), e.Error)
		}
	}
	t.printf("\n")
}

// writeFailedCalls lists the event's requests that failed or whose
// answers the runtime refused, with why: a refusal with each violation
// on a line of its own, and the grants that name the plugin without its
// file name's extension (notes, by plugin).
func writeFailedCalls(t *textWriter, p palette, e *Event, notes map[string][]string) {
	for _, c := range e.Calls {
		switch {
		case c.Refused:
			color, note := p.red, "none of its changes applied"
			if c.Expected {
				color, note = p.yellow, "none of its changes applied, as expected"
			}
			t.printf("        %s %s (%s)\n", p.paint(color, "refused "), c.Plugin, note)
			if len(c.Violations) == 0 {
				t.printf("                 %s\n", c.Error)
			}
			for _, v := range c.Violations {
				t.printf("                 %s\n", v)
			}
			for _, n := range notes[c.Plugin] {
				t.printf("                 %s\n", p.paint(p.yellow, fmt.Sprintf("note: %s, not %s: a plugin is named after its file, extension included", n, pluginName(c.Plugin))))
			}
		case c.Audited:
			t.printf("        %s %s (its changes applied: its grant is in audit mode)\n", p.paint(p.yellow, "audited "), c.Plugin)
			for _, v := range c.Violations {
				t.printf("                 %s\n", v)
			}
		case c.Error != "":
			t.printf("        %s %s: %s\n", p.paint(p.red, "failed  "), c.Plugin, c.Error)
		}
	}
}

func changeLine(p palette, c Change, self string) string {
	who := c.Plugin
	if who == "" {
		who = "(plugin)"
	}
	target := ""
	if c.Container != "" && c.Container != self {
		target = c.Container + ": "
	}
	refused := ""
	switch {
	case c.Refused:
		refused = "  " + p.paint(p.red, "(refused)")
	case c.Audited:
		refused = "  " + p.paint(p.yellow, "(audited)")
	}
	if c.Removed {
		return fmt.Sprintf("%s %s%s%s", p.paint(p.cyan, pad(who, 20)), target, p.paint(p.red, "- "+c.Field), refused)
	}
	return fmt.Sprintf("%s %s%s = %s%s", p.paint(p.cyan, pad(who, 20)), target, p.paint(p.green, "+ "+c.Field), c.Value, refused)
}

func (r *Report) writeContainers(t *textWriter, p palette) {
	t.printf("%s\n", p.paint(p.bold, "CONTAINERS (final OCI spec compared with the proposed one)"))
	for _, c := range r.Containers {
		t.printf("  %s  %s\n", p.paint(p.bold, c.Namespace+"/"+c.Pod+"/"+c.Name), p.paint(p.dim, "("+stateWords(c.State)+")"))
		if len(c.UpdatedBy) > 0 {
			steps := make([]string, len(c.UpdatedBy))
			for i, n := range c.UpdatedBy {
				steps[i] = fmt.Sprint(n)
			}
			t.printf("      %s\n", p.paint(p.dim, fmt.Sprintf("(the resources include the scenario's updateContainer at step %s)", strings.Join(steps, ", "))))
		}
		if c.Error != "" {
			t.printf("      %s\n", p.paint(p.yellow, c.Error))
			continue
		}
		if c.Spec == nil {
			continue
		}
		if len(c.Diff) == 0 {
			t.printf("      %s\n", p.paint(p.dim, "(unchanged)"))
		}
		for _, d := range c.Diff {
			color := p.yellow
			switch d.Kind {
			case ocispec.Added:
				color = p.green
			case ocispec.Removed:
				color = p.red
			}
			t.printf("      %s\n", p.paint(color, d.String()))
		}
	}
	t.printf("\n")
}

// stateWords says what a container's state means at the end of the run.
func stateWords(state string) string {
	switch state {
	case "failed":
		return "its creation failed"
	case "not created":
		return "no step created it"
	}
	return "container " + state + " at the end"
}

func (r *Report) writeResult(t *textWriter, p palette) {
	steps := 0
	for _, e := range r.Events {
		steps = max(steps, e.Step)
	}
	if r.OK {
		t.printf("%s %s, %s, %s, every outcome as expected (%.0fms)\n", p.paint(p.green, "OK"),
			count(steps, "step", "steps"), count(len(r.Events), "event", "events"), count(len(r.Plugins), "plugin", "plugins"), r.DurationMs)
		return
	}
	// A plugin that did not register, or that was lost, is a failure of
	// the run, not of a step.
	var faults []string
	if n := len(r.RegistrationErrors); n > 0 {
		faults = append(faults, fmt.Sprintf("%s did not register", count(n, "plugin", "plugins")))
	}
	if n := len(r.Lost); n > 0 {
		faults = append(faults, fmt.Sprintf("%s %s lost", count(n, "plugin", "plugins"), plural(n, "was", "were")))
	}
	if stepFailures := len(r.Failures) - len(r.RegistrationErrors) - len(r.Lost); stepFailures > 0 {
		t.printf("%s %d of %s did not go as expected", p.paint(p.red, "FAILED"), stepFailures, count(steps, "step", "steps"))
		for _, f := range faults {
			t.printf(", and %s", f)
		}
		t.printf(":\n")
	} else {
		t.printf("%s %s (%s played):\n", p.paint(p.red, "FAILED"), strings.Join(faults, ", and "), count(steps, "step", "steps"))
	}
	for _, f := range r.Failures {
		t.printf("  %s\n", f)
	}
}

// count returns "n one" for n == 1, else "n many".
func count(n int, one, many string) string { return fmt.Sprintf("%d %s", n, plural(n, one, many)) }

// plural returns one for n == 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
