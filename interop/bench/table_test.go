package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/summary"

	upapi "github.com/containerd/nri/pkg/api"
)

type (
	nriPod = nriapi.PodSandbox
	nriCtr = nriapi.Container
	upPod  = upapi.PodSandbox
	upCtr  = upapi.Container
)

// unit says how a figure is printed and compared.
type unit int

const (
	micros unit = iota // a latency, compared with the floor
	millis             // a duration not comparable with the floor
	perSec             // a throughput
	cpu                // CPU time per call, not compared with the floor
	count              // allocations per call
	kib                // memory
)

// num formats a figure of unit u without the unit; suffix is the unit.
func (u unit) num(v float64) string {
	switch u {
	case micros, cpu:
		return fmt.Sprintf("%.0f", v/1e3)
	case millis:
		return fmt.Sprintf("%.1f", v/1e6)
	case perSec:
		return fmt.Sprintf("%.0f", v)
	case kib:
		return fmt.Sprintf("%.1f", v/1024)
	}
	return fmt.Sprintf("%.0f", v)
}

func (u unit) suffix() string {
	switch u {
	case micros, cpu:
		return " µs"
	case millis:
		return " ms"
	case perSec:
		return "/s"
	case kib:
		return " MiB"
	}
	return ""
}

// format prints the rounds' figures vs of unit u: their median and range.
func (u unit) format(vs []float64) string {
	return summary.Of(vs).Format(u.num, u.suffix())
}

// row is one figure for both implementations, per round (NaN: not
// measured; +Inf: failed).
type row struct {
	scenario, metric string
	unit             unit
	up, ours         []float64
	note             string
	section          string // "" for the main table
}

// set stores v as implementation im's figure of the given round.
func (r *row) set(im string, round int, v float64) {
	vs := &r.ours
	if im == "upstream" {
		vs = &r.up
	}
	for len(*vs) <= round {
		*vs = append(*vs, math.NaN())
	}
	(*vs)[round] = v
}

// at returns the figure of round i (NaN if none).
func at(vs []float64, i int) float64 {
	if i < len(vs) {
		return vs[i]
	}
	return math.NaN()
}

// table collects the figures of one run of the harness, in rounds: each
// scenario runs upstream then nrikit, rounds times, and every figure is
// stored for its round, so that the table reports the median of the
// rounds, their range, and the median of the per-round ratios.
type table struct {
	// floor, floorMux are the p50 ns of the floors per round; floorCPU
	// the CPU ns per call of the floor's client and server.
	floor, floorMux []float64
	floorCPU        [2][]float64
	rows            []*row
	// section is the section new rows go to ("" for the main table);
	// each section is printed as a table of its own, after the main one.
	section string
	// round is the round whose figures are being recorded.
	round int
	// labels are the headings of the two figure columns of the sections
	// that compare something else than upstream and nrikit.
	labels map[string][2]string
}

func newTable() *table { return &table{} }

// inRound returns the name of a sub-benchmark in the current round: name
// with a last level "round=N", N from 1, so that a pattern that selects
// name selects it in every round (rather than the testing package's
// suffixes #01, #02 for a repeated name, which "$" would not match).
func (t *table) inRound(name string) string {
	return fmt.Sprintf("%s/round=%d", name, t.round+1)
}

// setFloor stores the current round's figure v in vs.
func (t *table) setFloor(vs *[]float64, v float64) {
	for len(*vs) <= t.round {
		*vs = append(*vs, math.NaN())
	}
	(*vs)[t.round] = v
}

// columns names the two figure columns of section (upstream's column
// first: the baseline of the ratio column), where they are not upstream
// and nrikit.
func (t *table) columns(section string, labels [2]string) {
	if t.labels == nil {
		t.labels = map[string][2]string{}
	}
	t.labels[section] = labels
}

func (t *table) row(scenario, metric string, u unit) *row {
	for _, r := range t.rows {
		if r.scenario == scenario && r.metric == metric {
			return r
		}
	}
	r := &row{scenario: scenario, metric: metric, unit: u, section: t.section}
	t.rows = append(t.rows, r)
	return r
}

// set stores v as im's figure of the current round.
func (t *table) set(im, scenario, metric string, u unit, v float64) *row {
	r := t.row(scenario, metric, u)
	r.set(im, t.round, v)
	return r
}

// record stores v for implementation im in the current round and, for
// nrikit, reports the ratio to upstream (and for latencies to the floor)
// as benchmark metrics. A benchmark function that runs more than once
// (b.N growing) records again; the last run's figure is the round's.
func (t *table) record(b *testing.B, im, scenario, metric string, u unit, v float64) {
	r := t.set(im, scenario, metric, u, v)
	tag := strings.ReplaceAll(metric, " ", "-")
	if f := at(t.floor, t.round); u == micros && !math.IsNaN(f) {
		b.ReportMetric(v/f, tag+"/floor")
	}
	if up := at(r.up, t.round); im == "nrikit" && !math.IsNaN(up) && !math.IsInf(up, 0) && up != 0 {
		b.ReportMetric(v/up, tag+"/upstream")
	}
}

func ns(d time.Duration) float64 { return float64(d.Nanoseconds()) }

// ratio formats the ratio of the medians of a and b.
func ratio(a, b []float64) string {
	return summary.Ratio(summary.Of(a).Median / summary.Of(b).Median)
}

// pairedRatio formats the median of the per-round ratios a[i]/b[i], with
// their range.
func pairedRatio(a, b []float64) string {
	return summary.Of(summary.Ratios(a, b)).Format(summary.Ratio, "")
}

// rounds reports how many rounds the table holds (the most figures of a
// row or floor).
func (t *table) rounds() int {
	n := len(t.floor)
	for _, r := range t.rows {
		n = max(n, len(r.up), len(r.ours))
	}
	return n
}

// print writes the table as markdown.
func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\n%d round(s), upstream then nrikit in each; every figure is the median of the rounds (their range in parentheses), nrikit/upstream the median of the per-round ratios\n", t.rounds())
	fmt.Fprintf(w, "\nfloor (bare ttrpc CreateContainer, unix socket, child process): p50 %s (CPU/call: client %s, server %s); with the NRI multiplexer on both ends: p50 %s\n\n",
		micros.format(t.floor), cpu.format(t.floorCPU[0]), cpu.format(t.floorCPU[1]), micros.format(t.floorMux))
	// The main table first, even if empty (unless a section has rows:
	// a run of one section prints that section's table only).
	var sections []string
	for _, r := range t.rows {
		if !slices.Contains(sections, r.section) {
			sections = append(sections, r.section)
		}
	}
	if i := slices.Index(sections, ""); i > 0 {
		sections = slices.Delete(sections, i, i+1)
		sections = slices.Insert(sections, 0, "")
	} else if i < 0 && len(sections) == 0 {
		sections = []string{""}
	}
	for _, sec := range sections {
		if sec != "" {
			fmt.Fprintf(w, "%s:\n\n", sec)
		}
		base, ours := "upstream", "nrikit"
		if l, ok := t.labels[sec]; ok {
			base, ours = l[0], l[1]
		}
		fmt.Fprintf(w, "| scenario | metric | %[1]s | %[2]s | %[1]s/floor | %[2]s/floor | %[2]s/%[1]s | note |\n", base, ours)
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---|")
		for _, r := range t.rows {
			if r.section != sec {
				continue
			}
			upF, ourF := "", ""
			if r.unit == micros {
				upF, ourF = ratio(r.up, t.floor), ratio(r.ours, t.floor)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.scenario, r.metric,
				r.unit.format(r.up), r.unit.format(r.ours), upF, ourF, pairedRatio(r.ours, r.up), r.note)
		}
		fmt.Fprintln(w)
	}
}

// TestRoundsInterleave checks the scenarios' order (upstream, nrikit,
// upstream, nrikit, ...) and that each figure is stored for its round.
func TestRoundsInterleave(t *testing.T) {
	tb := newTable()
	var order []string
	for round, im := range interleave(tb, 3, []impl{{name: "upstream"}, {name: "nrikit"}}) {
		if tb.round != round {
			t.Errorf("table records round %d during round %d", tb.round, round)
		}
		order = append(order, fmt.Sprintf("%s%d", im.name, round))
		tb.set(im.name, "s", "p50", micros, float64(1000*(round+1)))
	}
	if got, want := strings.Join(order, " "), "upstream0 nrikit0 upstream1 nrikit1 upstream2 nrikit2"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if tb.round != 0 {
		t.Errorf("round %d after the rounds, want 0", tb.round)
	}
	r := tb.row("s", "p50", micros)
	if !slices.Equal(r.up, []float64{1000, 2000, 3000}) || !slices.Equal(r.ours, r.up) {
		t.Errorf("figures per round: upstream %v, nrikit %v", r.up, r.ours)
	}
}

// TestTableReportsMedianAndSpread checks the printed table: the median of
// the rounds with their range, and the median of the per-round ratios
// (not the ratio of the medians).
func TestTableReportsMedianAndSpread(t *testing.T) {
	tb := newTable()
	for i, v := range []struct{ floor, up, ours float64 }{{200e3, 400e3, 100e3}, {250e3, 300e3, 240e3}, {300e3, 500e3, 300e3}} {
		tb.round = i
		tb.setFloor(&tb.floor, v.floor)
		tb.set("upstream", "CreateContainer", "p50", micros, v.up)
		tb.set("nrikit", "CreateContainer", "p50", micros, v.ours)
	}
	tb.round = 1
	tb.set("upstream", "Synchronize", "median", millis, math.Inf(1))
	tb.set("nrikit", "Synchronize", "median", millis, 5e9)
	var out strings.Builder
	tb.print(&out)
	s := out.String()
	// upstream 300/400/500 µs, nrikit 100/240/300 µs; the per-round
	// ratios 0.25, 0.80, 0.60 have the median 0.60 (the ratio of the
	// medians would be 0.60 too; the range tells them apart).
	for _, want := range []string{
		"3 round(s)",
		"p50 250 µs (200–300)",
		"| CreateContainer | p50 | 400 µs (300–500) | 240 µs (100–300) | 1.60 | 0.96 | 0.60 (0.25–0.80) |",
		"| Synchronize | median | FAIL | 5000.0 ms |  |  | — |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}
