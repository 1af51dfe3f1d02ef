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
