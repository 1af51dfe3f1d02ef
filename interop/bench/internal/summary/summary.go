// Package summary reduces the figures of a benchmark's rounds to a
// median and its spread, the way docs/benchmarks.md reports them: a
// figure measured in several interleaved rounds is printed as its median
// with the minimum and maximum of the rounds, and a ratio of two
// implementations as the median of the per-round ratios (each round's two
// figures were measured next to each other, under the same load).
package summary

import (
	"fmt"
	"math"
	"slices"
)

// Summary is the median of a set of figures and their range. NaN figures
// (not measured) are left out; +Inf (failed) counts as the largest.
type Summary struct {
	Median, Min, Max float64
	// N is how many figures were summarised; Median, Min and Max are NaN
	// when it is 0.
	N int
}

// Of summarises vs (which it does not modify).
func Of(vs []float64) Summary {
	var s []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		lo, hi := s[len(s)/2-1], s[len(s)/2]
		med = lo + (hi-lo)/2 // no overflow to +Inf, and +Inf stays +Inf
		if math.IsInf(hi, 1) {
			med = hi
		}
	}
	return Summary{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Ratios returns a[i]/b[i] for every round i where both figures are
// finite and b[i] is not 0, and NaN for the others.
func Ratios(a, b []float64) []float64 {
	out := make([]float64, max(len(a), len(b)))
	for i := range out {
		out[i] = math.NaN()
		if i < len(a) && i < len(b) && finite(a[i]) && finite(b[i]) && b[i] != 0 {
			out[i] = a[i] / b[i]
		}
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Format prints s: the median, formatted by num and followed by suffix
// (a unit: " µs"), and, when there were several figures and they differ
// as num prints them, their range in parentheses: "276 µs (270–281)". A
// summary of nothing prints "—", a failed (+Inf) median "FAIL" and a
// failed maximum "–FAIL".
func (s Summary) Format(num func(float64) string, suffix string) string {
	switch {
	case s.N == 0:
		return "—"
	case math.IsInf(s.Median, 1):
		return "FAIL"
	}
	med := num(s.Median) + suffix
	if s.N < 2 {
		return med
	}
	lo, hi := num(s.Min), num(s.Max)
	if math.IsInf(s.Max, 1) {
		hi = "FAIL"
	}
	if lo == hi {
		return med
	}
	return fmt.Sprintf("%s (%s–%s)", med, lo, hi)
}

// Ratio formats a ratio to two decimals, "—" for NaN.
func Ratio(v float64) string {
	if !finite(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}
