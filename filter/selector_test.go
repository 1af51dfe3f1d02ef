package filter

import (
	"errors"
	"strings"
	"testing"
)

func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{
		"gpu":                    "true",
		"tier":                   "b",
		"empty":                  "",
		"app.kubernetes.io/name": "trainer",
		"in":                     "notin",
	}
	tests := []struct {
		sel  string
		want bool
	}{
		{"", true},
		{"   ", true},
		{"gpu=true", true},
		{"gpu==true", true},
		{"gpu = true", true},
		{"gpu=false", false},
		{"missing=true", false},
		{"gpu!=false", true},
		{"gpu!=true", false},
		{"missing!=true", true}, // != holds for an absent label
		{"tier in (a,b)", true},
		{"tier in (a, b)", true},
		{"tier in (a,c)", false},
		{"missing in (a,b)", false},
		{"tier notin (a,b)", false},
		{"tier notin (a,c)", true},
		{"missing notin (a,b)", true}, // notin holds for an absent label
		{"gpu", true},
		{"missing", false},
		{"!missing", true},
		{"!gpu", false},
		{"! gpu", false},
		{"empty=", true}, // empty value
		{"empty", true},
		{"gpu=", false},
		{"empty in ()", true}, // "()" is the set {""}
		{"empty in (a,)", true},
		{"tier in (,b)", true},
		{"app.kubernetes.io/name=trainer", true},
		{"app.kubernetes.io/name in (trainer,other)", true},
		{"in=notin", true}, // keywords are ordinary keys and values
		{"in in (notin)", true},
		// Comma is AND.
		{"gpu=true,tier in (a,b),!legacy", true},
		{"gpu=true,tier in (a,b),!gpu", false},
		{"gpu=true,tier=c", false},
		{"gpu=true,gpu", true},
		{" gpu = true , tier notin ( c , d ) ", true},
	}
	for _, tc := range tests {
		s, err := ParseSelector(tc.sel)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tc.sel, err)
			continue
		}
		if got := s.Matches(labels); got != tc.want {
			t.Errorf("selector %q matches = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestSelectorEmptyAndString(t *testing.T) {
	s, err := ParseSelector("  a=b , c  ")
	if err != nil {
		t.Fatal(err)
	}
	if s.Empty() {
		t.Error("selector with requirements is Empty")
	}
	if got, want := s.String(), "a=b , c"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	e, err := ParseSelector(" ")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Empty() {
		t.Error("blank selector is not Empty")
	}
}

func TestSelectorErrors(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		sel    string
		offset int
		msg    string // substring of the message
	}{
		{"gpu=tr ue", 7, `unexpected identifier "ue"`},
		{"a b", 2, `expected an operator`},
		{"=x", 0, "expected a label key"},
		{"a,,b", 2, "expected a label key"},
		{"a,", 2, "expected a label key"},
		{"!a=b", 2, "expected ',' or end of selector"},
		{"!", 1, "expected a label key"},
		{"a in b", 5, "expected '('"},
		{"a in (b", 7, "unterminated set of values"},
		{"a in (b c)", 8, "in a set of values"},
		{"a in (b))", 8, "expected ',' or end"},
		{"a notin", 7, "expected '('"},
		{"a=(b)", 2, "expected a label value"},
		{"a=b=c", 3, "expected ',' or end"},
		{"x>1", 1, `operator ">" is not supported`},
		{"x < 1", 2, `operator "<" is not supported`},
		{"-a=b", 0, `invalid label key "-a"`},
		{"a-=b", 0, "must start and end with an alphanumeric"},
		{"Example.com/a=b", 0, "prefix part must be a lowercase RFC 1123 subdomain"},
		{"example..com/a=b", 0, "prefix part"},
		{"/a=b", 0, "prefix part must not be empty"},
		{"example.com/=b", 0, "name part must not be empty"},
		{"a/b/c=d", 0, "name part must consist"},
		{long + "=b", 0, "no more than 63 characters"},
		{"a=" + long, 2, "no more than 63 characters"},
		{"a=-b", 2, `invalid label value "-b"`},
		{"a in (b,-c)", 8, `invalid label value "-c"`},
		{"a=b,c=d,e f", 10, `unexpected identifier "f"`},
	}
	for _, tc := range tests {
		_, err := ParseSelector(tc.sel)
		var se *SelectorError
		if !errors.As(err, &se) {
			t.Errorf("ParseSelector(%q) error = %v, want a *SelectorError", tc.sel, err)
			continue
		}
		if se.Offset != tc.offset {
			t.Errorf("ParseSelector(%q): offset %d, want %d (%v)", tc.sel, se.Offset, tc.offset, err)
		}
		if !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("ParseSelector(%q): message %q does not contain %q", tc.sel, se.Msg, tc.msg)
		}
		if !strings.Contains(err.Error(), tc.sel) || !strings.Contains(err.Error(), "column ") {
			t.Errorf("ParseSelector(%q): error %q lacks the selector or the column", tc.sel, err)
		}
	}
}

func TestSelectorMatchDoesNotAllocate(t *testing.T) {
	s, err := ParseSelector("gpu=true,tier in (a,b),!legacy,x notin (y)")
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"gpu": "true", "tier": "b"}
	if n := testing.AllocsPerRun(100, func() { s.Matches(labels) }); n != 0 {
		t.Errorf("Matches allocates %v times per call", n)
	}
}
