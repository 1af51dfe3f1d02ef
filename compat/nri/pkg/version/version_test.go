package version

import (
	"slices"
	"testing"
)

func TestFindClosestMatch(t *testing.T) {
	versions := []string{"v2.2.1", "v1.7.0", "v2.0.0", "v1.7.26", "v2.2.0", "v1.7.7", "v2.2.0-rc.1", "bogus"}
	for _, c := range []struct{ v, want string }{
		{"v1.7.0", "v1.7.0"},
		{"v1.7.25", "v1.7.7"},
		{"v1.7.100", "v1.7.26"},
		{"v2.1.6", "v2.0.0"},
		{"v2.2.0-rc.2", "v2.2.0-rc.1"},
		{"v2.2.0", "v2.2.0"},
		{"v2.2.0-15-g0123abc", "v2.2.0"},   // after the tag, not before it
		{"v2.2.0-15-g0123abc.m", "v2.2.0"}, // a dirty tree too
		{"v2.2.0-15-gnothex", "v2.0.0"},    // not git-described: a pre-release, before rc.1
		{"v3", "v2.2.1"},
		{"v1.6.9", "bogus"}, // invalid versions sort first
		{"junk", "bogus"},   // and equal each other
	} {
		if got := FindClosestMatch(c.v, slices.Clone(versions)); got != c.want {
			t.Errorf("FindClosestMatch(%q) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := FindClosestMatch("v1.0.0", nil); got != "" {
		t.Errorf("FindClosestMatch with no versions = %q, want \"\"", got)
	}
}

func TestCompare(t *testing.T) {
	// Ascending, as semver.org's precedence example orders them.
	order := []string{"v1.0.0-alpha", "v1.0.0-alpha.1", "v1.0.0-alpha.beta", "v1.0.0-beta",
		"v1.0.0-beta.2", "v1.0.0-beta.11", "v1.0.0-rc.1", "v1.0.0", "v1.0.1", "v1.10.0", "v2"}
	for i := range order {
		for j := range order {
			got, want := compare(order[i], order[j]), i-j
			if (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("compare(%q, %q) = %d, want the sign of %d", order[i], order[j], got, want)
			}
		}
	}
	for _, bad := range []string{"1.0.0", "v01.0.0", "v1.0-rc.1", "v1.0.0-01", "v1.0.0-", "v1.0.0+a..b", "v1.2.3.4"} {
		if _, ok := parse(bad); ok {
			t.Errorf("parse(%q) accepted an invalid version", bad)
		}
	}
}
