// Package mdtable reads the markdown tables BenchmarkNRI prints (see
// docs/benchmarks.md) and compares the tables of two commits, for `make
// bench-compare`. It reads the tables of older commits too (one figure
// per cell) as well as the current ones (a median and its range).
package mdtable

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/interop/bench/internal/summary"
)

// Key names a row: its section ("" for the main table), scenario and
// metric.
type Key struct{ Section, Scenario, Metric string }

// Row is one row of a table: the medians of upstream's and nrikit's
// figures (NaN: not measured; +Inf: failed) and the unit they are
// printed in ("µs", "MiB", "/s", "" for a count).
type Row struct {
	Key
	Up, Ours float64
	Unit     string
}

// header starts every table: its two figure columns are upstream's and
// nrikit's, or in a section that compares two nrikit configurations
// (such as the policy section) the baseline's and the other's.
const header = "| scenario | metric |"

// Parse reads the tables of one run's output; other lines are ignored. A
// line ending with ':' before a table names its section.
func Parse(r io.Reader) ([]Row, error) {
	var (
		rows    []Row
		section string
		last    string // the last non-table, non-blank line
		inTable bool
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, header):
			inTable = true
			section = ""
			if strings.HasSuffix(last, ":") {
				section = strings.TrimSuffix(last, ":")
			}
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 4 {
				return nil, fmt.Errorf("mdtable: short row %q", line)
			}
			up, unit, err := value(cells[2])
			if err != nil {
				return nil, fmt.Errorf("mdtable: row %q: %w", line, err)
			}
			ours, unit2, err := value(cells[3])
			if err != nil {
				return nil, fmt.Errorf("mdtable: row %q: %w", line, err)
			}
			if unit == "" {
				unit = unit2
			}
			rows = append(rows, Row{Key: Key{section, strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])},
				Up: up, Ours: ours, Unit: unit})
		default:
			inTable = false
			if line != "" {
				last = line
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mdtable: %w", err)
	}
	return rows, nil
}

// value reads a cell: "276 µs", "276 µs (270–281)", "12.9 MiB", "2943/s",
// "189", "FAIL" or "—".
func value(cell string) (float64, string, error) {
	s := strings.TrimSpace(cell)
	if i := strings.Index(s, " ("); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "—", "":
		return math.NaN(), "", nil
	case "FAIL":
		return math.Inf(1), "", nil
	}
	num, unit := s, ""
	if i := strings.IndexFunc(s, func(r rune) bool { return r != '.' && r != '-' && (r < '0' || r > '9') }); i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, "", fmt.Errorf("figure %q: %w", cell, err)
	}
	return v, unit, nil
}

// Compared is a row of two commits' runs: nrikit's figures before and
// after (each a summary of the runs) and nrikit/upstream per run before
// and after (upstream is the same code in both, so it tracks the load of
// the machine, and the ratio to it is the steadier figure).
type Compared struct {
	Key
	Unit                  string
	Before, After         summary.Summary
	VsUpBefore, VsUpAfter summary.Summary
}

// Compare pairs the rows of the runs of two commits (before[i] and
// after[i] were run one after the other), in the order of the first
// run's rows (rows only one commit has come last).
func Compare(before, after [][]Row) []Compared {
	var order []Key
	seen := map[Key]bool{}
	collect := func(runs [][]Row) map[Key][]Row {
		m := map[Key][]Row{}
		for i, run := range runs {
			for _, r := range run {
				if !seen[r.Key] {
					seen[r.Key] = true
					order = append(order, r.Key)
				}
				for len(m[r.Key]) < i {
					m[r.Key] = append(m[r.Key], Row{Key: r.Key, Up: math.NaN(), Ours: math.NaN()})
				}
				m[r.Key] = append(m[r.Key], r)
			}
		}
		return m
	}
	b, a := collect(before), collect(after)
	var out []Compared
	for _, k := range order {
		c := Compared{Key: k}
		ours := func(rs []Row) (v, up []float64) {
			for _, r := range rs {
				v, up = append(v, r.Ours), append(up, r.Up)
				if c.Unit == "" {
					c.Unit = r.Unit
				}
			}
			return v, up
		}
		bv, bu := ours(b[k])
		av, au := ours(a[k])
		c.Before, c.After = summary.Of(bv), summary.Of(av)
		c.VsUpBefore, c.VsUpAfter = summary.Of(summary.Ratios(bv, bu)), summary.Of(summary.Ratios(av, au))
		out = append(out, c)
	}
	return out
}

// Ratio is the median after over the median before (NaN if either is
// missing or failed).
func (c Compared) Ratio() float64 {
	if c.Before.N == 0 || c.After.N == 0 || math.IsInf(c.Before.Median, 0) || math.IsInf(c.After.Median, 0) || c.Before.Median == 0 {
		return math.NaN()
	}
	return c.After.Median / c.Before.Median
}

// Print writes the comparison as a markdown table.
func Print(w io.Writer, cs []Compared, base, head string) {
	fmt.Fprintf(w, "nrikit before (%s) and after (%s): median of the runs (their range); nrikit/upstream: median of the runs' ratios (upstream is the same code in both runs, a control for the machine's load)\n\n", base, head)
	fmt.Fprintln(w, "| section | scenario | metric | before | after | after/before | nrikit/upstream before | nrikit/upstream after |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		num := func(v float64) string { return strconv.FormatFloat(v, 'f', decimals(c.Unit), 64) }
		suffix := ""
		if c.Unit != "" {
			suffix = " " + c.Unit
			if strings.HasPrefix(c.Unit, "/") {
				suffix = c.Unit
			}
		}
		sec, _, _ := strings.Cut(c.Section, " (") // the section's name without its explanation
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", sec, c.Scenario, c.Metric,
			c.Before.Format(num, suffix), c.After.Format(num, suffix), summary.Ratio(c.Ratio()),
			c.VsUpBefore.Format(summary.Ratio, ""), c.VsUpAfter.Format(summary.Ratio, ""))
	}
}

// decimals is how many decimals the harness prints figures of unit in.
func decimals(unit string) int {
	switch unit {
	case "ms", "MiB":
		return 1
	}
	return 0
}
