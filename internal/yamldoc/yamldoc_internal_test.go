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
