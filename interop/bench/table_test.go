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

func (u unit) format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "FAIL"
	}
	switch u {
	case micros, cpu:
		return fmt.Sprintf("%.0f µs", v/1e3)
	case millis:
		return fmt.Sprintf("%.1f ms", v/1e6)
	case perSec:
		return fmt.Sprintf("%.0f/s", v)
	case count:
		return fmt.Sprintf("%.0f", v)
	case kib:
		return fmt.Sprintf("%.1f MiB", v/1024)
	}
	return fmt.Sprint(v)
}

// row is one figure for both implementations.
type row struct {
	scenario, metric string
	unit             unit
	up, ours         float64 // NaN: not measured; +Inf: failed
	note             string
	section          string // "" for the main table
}

// table collects the figures of one run of the harness.
type table struct {
	floor, floorMux float64    // p50 ns of the floors
	floorCPU        [2]float64 // CPU ns per call of the floor's client and server
	rows            []*row
	// section is the section new rows go to ("" for the main table);
	// each section is printed as a table of its own, after the main one.
	section string
}

func newTable() *table { return &table{floor: math.NaN(), floorMux: math.NaN()} }

func (t *table) row(scenario, metric string, u unit) *row {
	for _, r := range t.rows {
		if r.scenario == scenario && r.metric == metric {
			return r
		}
	}
	r := &row{scenario: scenario, metric: metric, unit: u, up: math.NaN(), ours: math.NaN(), section: t.section}
	t.rows = append(t.rows, r)
	return r
}

// record stores v for implementation im and, for nrikit, reports the
// ratio to upstream (and for latencies to the floor) as benchmark
// metrics.
func (t *table) record(b *testing.B, im, scenario, metric string, u unit, v float64) {
	r := t.row(scenario, metric, u)
	if im == "upstream" {
		r.up = v
	} else {
		r.ours = v
	}
	tag := strings.ReplaceAll(metric, " ", "-")
	if u == micros && !math.IsNaN(t.floor) {
		b.ReportMetric(v/t.floor, tag+"/floor")
	}
	if im == "nrikit" && !math.IsNaN(r.up) && !math.IsInf(r.up, 0) && r.up != 0 {
		b.ReportMetric(v/r.up, tag+"/upstream")
	}
}

func ns(d time.Duration) float64 { return float64(d.Nanoseconds()) }

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// print writes the table as markdown.
func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\nfloor (bare ttrpc CreateContainer, unix socket, child process): p50 %s (CPU/call: client %s, server %s); with the NRI multiplexer on both ends: p50 %s\n\n",
		micros.format(t.floor), cpu.format(t.floorCPU[0]), cpu.format(t.floorCPU[1]), micros.format(t.floorMux))
	sections := []string{""}
	for _, r := range t.rows {
		if !slices.Contains(sections, r.section) {
			sections = append(sections, r.section)
		}
	}
	for _, sec := range sections {
		if sec != "" {
			fmt.Fprintf(w, "%s:\n\n", sec)
		}
		fmt.Fprintln(w, "| scenario | metric | upstream | nrikit | upstream/floor | nrikit/floor | nrikit/upstream | note |")
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
				r.unit.format(r.up), r.unit.format(r.ours), upF, ourF, ratio(r.ours, r.up), r.note)
		}
		fmt.Fprintln(w)
	}
}
