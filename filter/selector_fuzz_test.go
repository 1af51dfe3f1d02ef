package filter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzSelector checks that parsing any text never panics, that a rejected
// selector's error is a *SelectorError pointing into the text, and that an
// accepted selector's String() parses again to the same requirements.
// (interop/labelselector compares the parser with Kubernetes'.)
func FuzzSelector(f *testing.F) {
	for _, s := range []string{
		"", "a", "!a", "a=b", "a==b", "a!=b", "a=", "a in (b,c)", "a notin ()", "a in (,b)",
		"gpu=true,tier in (a,b),!legacy", " a = b , c != d ", "example.com/gpu=nvidia", "in in (in)",
		"=", "!!a", "a=b=c", "a in (b", "a,", "a>1", "A/b", "a=é", "\ta\n", "a=b\x00", "\u00a0a",
		strings.Repeat("a", 64), strings.Repeat("a.", 127) + "/b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSelector(text)
		if err != nil {
			var se *SelectorError
			if !errors.As(err, &se) || se.Selector != text || se.Offset < 0 || se.Offset > len(text) {
				t.Fatalf("ParseSelector(%q) error %v: not a *SelectorError with an offset into the text", text, err)
			}
			return
		}
		again, err := ParseSelector(s.String())
		if err != nil {
			t.Fatalf("ParseSelector(%q).String() = %q does not parse: %v", text, s.String(), err)
		}
		if again.String() != s.String() || !reflect.DeepEqual(again.reqs, s.reqs) {
			t.Fatalf("selector %q: String() %q parses to %+v, want %+v", text, s.String(), again.reqs, s.reqs)
		}
		if s.Empty() != (len(s.reqs) == 0) || (s.Empty() && !s.Matches(nil)) {
			t.Fatalf("selector %q: Empty() %v with %d requirements", text, s.Empty(), len(s.reqs))
		}
	})
}
