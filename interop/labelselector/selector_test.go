// Package labelselector_test proves filter.ParseSelector, nrikit's own
// label-selector parser, against the one Kubernetes uses
// (k8s.io/apimachinery/pkg/labels.Parse): for every input both accept or
// both reject it, and an accepted selector matches the same label sets.
//
// The deliberate differences, where nrikit rejects what Kubernetes accepts:
//   - the set-based operators '<' and '>' of node selectors ("replicas>1")
//     are not supported (docs/scope.md, filter.ParseSelector);
//   - Kubernetes' lexer takes a NUL byte for the end of the text and ignores
//     what follows ("a=b\x00anything" is "a=b"); nrikit takes NUL for an
//     ordinary character, which no key or value may hold.
package labelselector_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/nrikit/nrikit/filter"
)

// seeds are the seed corpus: selectors both parsers accept, selectors both
// reject, and the deliberate difference.
var seeds = []string{
	// Valid.
	"", "   ", "a", "!a", "a=b", "a==b", "a!=b", "a=", "a!=", "a==",
	"a in (b)", "a in (b,c)", "a notin (b,c)", "a in ()", "a in (,b)", "a in (b,)", "a in(b)",
	"gpu=true,tier in (a,b),!legacy", " a = b , c != d ", "a\t=\tb\n,\r!c",
	"example.com/gpu=nvidia", "k8s.io/a-b_c.d=E-f_g.h", "A=B", "a.b-c_d=1",
	"in", "notin", "a=in", "a in (in,notin)", "in in (in)",
	strings.Repeat("a", 63) + "=" + strings.Repeat("b", 63),
	strings.Repeat("a.", 126) + "a/b",
	// Invalid.
	"=", "!", "!!a", "a=b=c", "a b", "a in b", "a in (b", "a in (b c)", "a notin", "a,", ",a", "a,,b",
	"!a=b", "a=(b)", "-a", "a-", "a=-b", "a=b-", "A/b", "/a", "a/", "a/b/c", "a..b/c", "a=b c",
	strings.Repeat("a", 64), "a=" + strings.Repeat("b", 64), strings.Repeat("a", 254) + "/b",
	"a=é", "é", "a in (b))", "(a)", "a>=1", "a=>1", "a=b\x00c=d",
	// Deliberately rejected: node-selector operators, NUL.
	"a>1", "a<1", "a>b", "a<", "a=b\x00", "\x00garbage",
}

// FuzzAgainstKubernetes is the differential test. Without -fuzz it runs
// over the seed corpus.
func FuzzAgainstKubernetes(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ours, ourErr := filter.ParseSelector(text)
		theirs, theirErr := labels.Parse(text)
		if theirErr == nil && ourErr != nil && deliberate(text, theirs) {
			return
		}
		if (ourErr == nil) != (theirErr == nil) {
			t.Fatalf("selector %q: nrikit error %v, Kubernetes error %v", text, ourErr, theirErr)
		}
		if ourErr != nil {
			var se *filter.SelectorError
			if !errors.As(ourErr, &se) {
				t.Fatalf("selector %q: error %v is not a *filter.SelectorError", text, ourErr)
			}
			return
		}
		for _, set := range labelSets(text) {
			if got, want := ours.Matches(set), theirs.Matches(labels.Set(set)); got != want {
				t.Fatalf("selector %q on labels %v: nrikit %v, Kubernetes %v", text, set, got, want)
			}
		}
	})
}

// TestSeedsCoverBothOutcomes keeps the corpus meaningful: it must hold
// selectors both parsers accept, both reject, and the deliberate difference.
func TestSeedsCoverBothOutcomes(t *testing.T) {
	var accepted, rejected, different int
	for _, s := range seeds {
		_, ourErr := filter.ParseSelector(s)
		theirs, theirErr := labels.Parse(s)
		switch {
		case theirErr == nil && ourErr != nil && deliberate(s, theirs):
			different++
		case ourErr == nil:
			accepted++
		default:
			rejected++
		}
	}
	if accepted < 20 || rejected < 20 || different == 0 {
		t.Errorf("seed corpus: %d accepted, %d rejected, %d deliberate differences; want at least 20, 20 and 1",
			accepted, rejected, different)
	}
}

// deliberate reports whether text, which Kubernetes parsed as s, falls
// under a deliberate difference: it holds a NUL byte, or s has a '<' or '>'
// requirement.
func deliberate(text string, s labels.Selector) bool {
	if strings.IndexByte(text, 0) >= 0 {
		return true
	}
	reqs, _ := s.Requirements()
	for _, r := range reqs {
		if op := r.Operator(); op == selection.GreaterThan || op == selection.LessThan {
			return true
		}
	}
	return false
}

// labelSets returns label sets to match a selector against, made of the
// words of its text (the keys and values it names, and others): none; each
// word set to each of a few values; every word set to the word after it;
// every other word set to "".
func labelSets(text string) []map[string]string {
	words := strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" \t\r\n!=(),<>", r) })
	if len(words) > 8 {
		words = words[:8]
	}
	sets := []map[string]string{{}}
	for _, w := range words {
		for _, v := range append([]string{"", "x"}, words...) {
			sets = append(sets, map[string]string{w: v})
		}
	}
	next, sparse := map[string]string{}, map[string]string{}
	for i, w := range words {
		next[w] = words[(i+1)%len(words)]
		if i%2 == 0 {
			sparse[w] = ""
		}
	}
	return append(sets, next, sparse)
}
