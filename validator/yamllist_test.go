package validator

import (
	"slices"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"  \n", nil, false},
		{"[]", nil, false},
		{"[a]", []string{"a"}, false},
		{"[a, b ,c]", []string{"a", "b", "c"}, false},
		{"[ 10-foo , bar ]", []string{"10-foo", "bar"}, false},
		{`["a", "b"]`, []string{"a", "b"}, false},
		{`["a,b", 'c''d', "e\"f"]`, []string{"a,b", "c'd", `e"f`}, false},
		{"[a, b,]", []string{"a", "b"}, false},
		{"- a\n- b", []string{"a", "b"}, false},
		{"\n- a # comment\n\n# note\n-   'b c'\n- \"d\"", []string{"a", "b c", "d"}, false},
		{"- ~\n-\n- 1", []string{"~", "", "1"}, false},
		{"a", nil, true},
		{"[a", nil, true},
		{"[a, [b]]", nil, true},
		{"[a,, b]", nil, true},
		{`["a]`, nil, true},
		{"[\"a\" b]", nil, true},
		{"{a: b}", nil, true},
		{"- a\nb", nil, true},
		{"- [a]", nil, true},
		{"- - a", nil, true},
		{"- 'a' b", nil, true},
		{`["\q"]`, nil, true},
	} {
		got, err := parseList(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("parseList(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parseList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseListErrorNamesLine(t *testing.T) {
	_, err := parseList("- a\n- [b]")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("parseList error = %v, want one naming line 2", err)
	}
}
