package summary

import (
	"math"
	"testing"
)

func TestOf(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name          string
		in            []float64
		med, min, max float64
		n             int
	}{
		{"odd", []float64{5, 1, 3}, 3, 1, 5, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4, 4},
		{"not measured left out", []float64{nan, 7, nan, 9, 8}, 8, 7, 9, 3},
		{"a failure is the largest", []float64{inf, 2, 1}, 2, 1, inf, 3},
		{"failed in most rounds", []float64{inf, inf, 1}, inf, 1, inf, 3},
		{"even with a failure", []float64{1, inf}, inf, 1, inf, 2},
	} {
		got := Of(c.in)
		if got.Median != c.med || got.Min != c.min || got.Max != c.max || got.N != c.n {
			t.Errorf("%s: Of(%v) = %+v, want median %v, range %v–%v, n %d", c.name, c.in, got, c.med, c.min, c.max, c.n)
		}
	}
	if s := Of([]float64{nan}); s.N != 0 || !math.IsNaN(s.Median) {
		t.Errorf("Of(NaN) = %+v, want nothing", s)
	}
	in := []float64{3, 1, 2}
	Of(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("Of sorted its argument: %v", in)
	}
}

func TestRatios(t *testing.T) {
	got := Ratios([]float64{2, 3, math.Inf(1), 4, 5}, []float64{1, 0, 1, math.NaN()})
	want := []float64{2, math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	if len(got) != len(want) {
		t.Fatalf("Ratios = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("Ratios[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestFormat(t *testing.T) {
	num := func(v float64) string { return Ratio(v / 1e3) }
	for _, c := range []struct {
		in   []float64
		want string
	}{
		{nil, "—"},
		{[]float64{1500}, "1.50 µs"},
		{[]float64{1500, 1200, 1900}, "1.50 µs (1.20–1.90)"},
		{[]float64{1500, 1501, 1502}, "1.50 µs"}, // the range prints as the median
		{[]float64{math.Inf(1), math.Inf(1), 1000}, "FAIL"},
		{[]float64{1000, 1200, math.Inf(1)}, "1.20 µs (1.00–FAIL)"},
	} {
		if got := Of(c.in).Format(num, " µs"); got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
