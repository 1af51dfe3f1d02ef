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
	t.printf("%s %s (runtime %s)\n\n", p.paint(p.bold, "NRI scenario"), p.paint(p.bold, fmt.Sprintf("%q", r.Scenario)), r.Runtime)
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
	for _, pl := range r.Plugins {
		pid := ""
		if pl.PID != 0 {
			pid = fmt.Sprintf("pid %d", pl.PID)
		}
		t.printf("  %s  %-13s %-10s %3d calls, %d filtered%s\n", p.paint(p.cyan, pad(pl.ID, width)), pl.Kind, pid,
			pl.Calls, pl.Filtered, errorCount(p, pl.Errors))
	}
	if len(r.Plugins) == 0 {
		t.printf("  (none)\n")
	}
	for _, e := range r.RegistrationErrors {
		t.printf("  %s %s\n", p.paint(p.red, e.Plugin+" not registered:"), e.Reason)
	}
	t.printf("\n")
}

func errorCount(p palette, n int) string {
	if n == 0 {
		return ""
	}
	return ", " + p.paint(p.red, fmt.Sprintf("%d failed", n))
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
				t.printf("        %s %-24s %7.2fms %s\n", p.paint(p.dim, "call    "), c.Plugin, c.LatencyMs, c.Error)
			}
		}
		for _, c := range e.Changes {
			t.printf("        %s\n", changeLine(p, c, e.Container))
		}
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

func changeLine(p palette, c Change, self string) string {
	who := c.Plugin
	if who == "" {
		who = "(plugin)"
	}
	target := ""
	if c.Container != "" && c.Container != self {
		target = c.Container + ": "
	}
	if c.Removed {
		return fmt.Sprintf("%s %s%s", p.paint(p.cyan, pad(who, 20)), target, p.paint(p.red, "- "+c.Field))
	}
	return fmt.Sprintf("%s %s%s = %s", p.paint(p.cyan, pad(who, 20)), target, p.paint(p.green, "+ "+c.Field), c.Value)
}

func (r *Report) writeContainers(t *textWriter, p palette) {
	t.printf("%s\n", p.paint(p.bold, "CONTAINERS (final OCI spec compared with the proposed one)"))
	for _, c := range r.Containers {
		t.printf("  %s  %s\n", p.paint(p.bold, c.Namespace+"/"+c.Pod+"/"+c.Name), c.State)
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
	// A plugin that did not register is a failure of the run, not of a step.
	if stepFailures := len(r.Failures) - len(r.RegistrationErrors); stepFailures > 0 {
		t.printf("%s %d of %s did not go as expected", p.paint(p.red, "FAILED"), stepFailures, count(steps, "step", "steps"))
		if n := len(r.RegistrationErrors); n > 0 {
			t.printf(", and %d %s did not register", n, plural(n, "plugin", "plugins"))
		}
		t.printf(":\n")
	} else {
		n := len(r.RegistrationErrors)
		t.printf("%s %s did not register (%s played without):\n", p.paint(p.red, "FAILED"), count(n, "plugin", "plugins"), count(steps, "step", "steps"))
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
