package testscale

import (
	"testing"
	"time"
)

func TestFromLoad(t *testing.T) {
	for _, c := range []struct {
		load float64
		ncpu int
		want float64
	}{
		{0, 2, 1}, {1, 2, 1.5}, {4, 2, 3}, {100, 2, MaxFactor}, {3, 0, 1},
	} {
		if got := fromLoad(c.load, c.ncpu); got != c.want {
			t.Errorf("fromLoad(%v, %d) = %v, want %v", c.load, c.ncpu, got, c.want)
		}
	}
}

// TestParseLoad: the load is the larger of the one-minute average and
// the threads runnable now besides the reader, so that hogs started a
// moment ago count before the average has caught up with them.
func TestParseLoad(t *testing.T) {
	for _, c := range []struct {
		line string
		want float64
	}{
		{"0.50 0.40 0.30 1/300 42\n", 0.5}, // quiet: only the reader runs
		{"0.10 0.40 0.30 3/300 42\n", 2},   // two hogs just started
		{"30.00 20.0 10.0 2/300 42\n", 30}, // busy for a minute, calm now
		{"0.10 0.40 0.30 0/300 42\n", 0.1},
		{"0.10 0.40 0.30\n", 0.1}, {"x 0.40 0.30 3/300 42", 0}, {"", 0},
		{"0.10 0.40 0.30 x/300 42", 0.1},
	} {
		if got := parseLoad(c.line); got != c.want {
			t.Errorf("parseLoad(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv(EnvVar, "3")
	if f := Factor(); f != 3 {
		t.Errorf("Factor() = %v with %s=3", f, EnvVar)
	}
	if d := D(time.Second); d != 3*time.Second {
		t.Errorf("D(1s) = %v", d)
	}
	t.Setenv(EnvVar, "0.5") // below 1: ignored, the load decides
	if f := Factor(); f < 1 || f > MaxFactor {
		t.Errorf("Factor() = %v", f)
	}
}
