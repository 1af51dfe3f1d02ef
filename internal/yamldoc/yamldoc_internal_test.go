package yamldoc

import "testing"

// TestTypeMismatchWithoutField keeps yaml.v3's line when no value on it
// matches the message.
func TestTypeMismatchWithoutField(t *testing.T) {
	m := typeMismatch("cannot unmarshal !!str `x` into uint64")
	if m == nil || fieldAt(nil, 3, m) != "" || m.describe("") != `cannot unmarshal a string ("x"): want a non-negative integer` {
		t.Errorf("mismatch %+v", m)
	}
	if typeMismatch("field x not found in type scenario.Pod") != nil {
		t.Error("an unknown field is not a type mismatch")
	}
}

// TestDistance checks the edit distance the suggestions of unknown keys
// are made with.
func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"env", "env", 0}, {"evn", "env", 1}, {"ev", "env", 1}, {"envv", "env", 1}, {"xyz", "env", 3},
		{"", "env", 3}, {"maxcpushare", "maxcpushares", 1},
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := closest("xyz", []string{"env", "dirs"}); got != "" {
		t.Errorf("closest(xyz) = %q, want none", got)
	}
}
