package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is the outcome of one check.
type Result struct {
	// Name identifies the check, e.g. "registers within the timeout".
	Name string `json:"name"`
	// Passed is true if the check passed. Informational checks always pass.
	Passed bool `json:"passed"`
	// Informational marks a check that reports what the peer did without
	// judging it: an nrikit extension or recommended behaviour that the
	// NRI protocol does not require. It never fails a report.
	Informational bool `json:"informational,omitempty"`
	// Skipped marks a check that does not apply to the peer (such as the
	// registration of a WASM plugin, which has no connection); Reason
	// says why. It never fails a report.
	Skipped bool `json:"skipped,omitempty"`
	// Reason explains a failure, or gives what an informational check
	// found.
	Reason string `json:"reason,omitempty"`
	// Duration is how long the check took (for event checks: the plugin's
	// latency).
	Duration time.Duration `json:"duration_ns"`
}

// Report is the outcome of a checker run, in the order the checks ran.
type Report struct {
	// Results holds one entry per check that ran.
	Results []Result `json:"results"`
}

// Failed reports whether any check failed. Informational checks never
// fail.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if !res.Passed {
			return true
		}
	}
	return false
}

// Counts returns how many required checks passed and failed;
// informational results are counted by InformationalCount, skipped ones
// by SkippedCount.
func (r *Report) Counts() (passed, failed int) {
	for _, res := range r.Results {
		switch {
		case res.Informational, res.Skipped:
		case res.Passed:
			passed++
		default:
			failed++
		}
	}
	return passed, failed
}

// InformationalCount returns how many informational results the report
// holds.
func (r *Report) InformationalCount() int {
	return r.count(func(res Result) bool { return res.Informational })
}

// Result returns the result of the check called name, if it ran.
func (r *Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// SkippedCount returns how many checks the report holds as skipped.
func (r *Report) SkippedCount() int {
	return r.count(func(res Result) bool { return res.Skipped })
}

// count returns how many results match.
func (r *Report) count(match func(Result) bool) int {
	n := 0
	for _, res := range r.Results {
		if match(res) {
			n++
		}
	}
	return n
}

// WriteText renders the report for people: one line per check, marked
// PASS, FAIL, INFO (informational) or SKIP, then a verdict line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Results {
		mark := "PASS"
		switch {
		case res.Informational:
			mark = "INFO"
		case res.Skipped:
			mark = "SKIP"
		case !res.Passed:
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "%s  %-52s %10s", mark, res.Name, formatDuration(res.Duration))
		if res.Reason != "" {
			fmt.Fprintf(&b, "  %s", res.Reason)
		}
		b.WriteByte('\n')
	}
	passed, failed := r.Counts()
	info := ""
	if n := r.InformationalCount(); n > 0 {
		info = fmt.Sprintf(", %d informational", n)
	}
	if n := r.SkippedCount(); n > 0 {
		info += fmt.Sprintf(", %d skipped", n)
	}
	if failed == 0 {
		fmt.Fprintf(&b, "result: PASS (%d checks%s)\n", passed, info)
	} else {
		fmt.Fprintf(&b, "result: FAIL (%d of %d checks failed%s)\n", failed, passed+failed, info)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// WriteJSON renders the report as indented JSON, with a "failed" summary
// field; informational results have "informational": true, skipped ones
// "skipped": true.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		Failed  bool     `json:"failed"`
		Results []Result `json:"results"`
	}{Failed: r.Failed(), Results: r.Results}
	if out.Results == nil {
		out.Results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	default:
		return d.Round(100 * time.Microsecond).String()
	}
}

// recorder accumulates results, timing each check.
type recorder struct {
	report Report
}

func (rc *recorder) add(name string, passed bool, d time.Duration, format string, args ...any) {
	rc.report.Results = append(rc.report.Results, Result{
		Name:     name,
		Passed:   passed,
		Reason:   fmt.Sprintf(format, args...),
		Duration: d,
	})
}

func (rc *recorder) pass(name string, d time.Duration, format string, args ...any) {
	rc.add(name, true, d, format, args...)
}

func (rc *recorder) fail(name string, d time.Duration, format string, args ...any) {
	rc.add(name, false, d, format, args...)
}

// info records an informational result: what the peer did, never a
// failure.
func (rc *recorder) info(name string, d time.Duration, format string, args ...any) {
	rc.add(name, true, d, format, args...)
	rc.report.Results[len(rc.report.Results)-1].Informational = true
}

// skip records a check that does not apply to the peer.
func (rc *recorder) skip(name string, format string, args ...any) {
	rc.add(name, true, 0, format, args...)
	rc.report.Results[len(rc.report.Results)-1].Skipped = true
}
