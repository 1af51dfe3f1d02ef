package filter

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGlob checks that the regexp-based matcher agrees with a reference:
// the token-by-token matcher the package used before (below). Both must
// accept or reject the same patterns and, for an accepted one, match the
// same names. Patterns and names that are not valid UTF-8 are outside the
// comparison (names and patterns arrive in protobuf strings, which are
// UTF-8): the new matcher must reject such a pattern.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"kube-*", "kube-system"}, {"*", ""}, {"k?be", "kübe"}, {"[a-c]x", "bx"},
		{"[^a-c]x", "\nx"}, {"[!a-c]x", "ax"}, {`a\*b`, "a*b"}, {`[\]]`, "]"},
		{"registry.io/gpu/*", "registry.io/gpu/sub/cuda:12"}, {"*/cuda:1?", "nvcr.io/nvidia/cuda:12"},
		{"*a*b*c", "xxaxxbxxbxxc"}, {"a*a*a*a*b", strings.Repeat("a", 30)}, {"*?", ""},
		{"[", "["}, {"[]", ""}, {"[^]", ""}, {"[a-]", "a"}, {"[z-a]", "b"}, {`a\`, "a"}, {"[-a]", "-"},
		{"[.]*", ".x"}, {"(a|b)+", "(a|b)+"}, {"a$^", "a$^"}, {"**x", "yx"}, {"[\u00e9-\u00ff]?", "\u00eaz"},
		{"\\\u00fc*", "\u00fcber"}, {"[\\-\\]]", "-"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := compileGlob(pattern)
		if !utf8.ValidString(pattern) {
			if err == nil {
				t.Fatalf("compileGlob(%q) accepted a pattern that is not UTF-8", pattern)
			}
			return
		}
		ref, refErr := refCompile(pattern)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("compileGlob(%q) error %v, reference error %v", pattern, err, refErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", pattern)) && pattern != "" {
				t.Fatalf("compileGlob(%q) error %q does not quote the pattern", pattern, err)
			}
			return
		}
		if !utf8.ValidString(name) {
			return
		}
		if got, want := g.match(name), ref.match(name); got != want {
			t.Fatalf("glob %q match %q = %v, reference %v", pattern, name, got, want)
		}
	})
}

// refKind selects a fast path for common pattern shapes.
type refKind uint8

const (
	refGeneral refKind = iota // token-by-token matching
	refExact                  // no metacharacters: string equality
	refPrefix                 // "lit*"
	refAny                    // "*"
)

// refTokKind is the kind of one pattern token.
type refTokKind uint8

const (
	refLiteral refTokKind = iota // a literal string
	refOne                       // ?: any single character
	refStar                      // *: any sequence, '/' included
	refClass                     // [...]: one character of a class
)

// refRange is an inclusive range of a character class.
type refRange struct{ lo, hi rune }

// refTok is one token of a compiled pattern.
type refTok struct {
	kind   refTokKind
	lit    string     // refLiteral
	negate bool       // refClass
	ranges []refRange // refClass
}

// refGlob is a compiled shell pattern. Unlike path.Match, '*' and '?' also
// match '/', so that "registry.io/gpu/*" matches "registry.io/gpu/cuda:12".
type refGlob struct {
	pattern string
	kind    refKind
	lit     string // refExact, refPrefix
	toks    []refTok
}

// refCompile validates and compiles one pattern: '*' matches any sequence
// of characters, '?' any one character, '[abc]', '[a-z]' one character of a
// class, '[^a-z]' or '[!a-z]' one character not in it, and '\c' the
// character c literally.
func refCompile(pattern string) (refGlob, error) {
	g := refGlob{pattern: pattern}
	if pattern == "" {
		return g, fmt.Errorf("empty pattern")
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, refTok{kind: refLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); {
		switch c := pattern[i]; c {
		case '*':
			flush()
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != refStar {
				g.toks = append(g.toks, refTok{kind: refStar})
			}
			i++
		case '?':
			flush()
			g.toks = append(g.toks, refTok{kind: refOne})
			i++
		case '\\':
			if i+1 == len(pattern) {
				return g, fmt.Errorf("pattern %q: trailing backslash", pattern)
			}
			r, w := utf8.DecodeRuneInString(pattern[i+1:])
			lit.WriteRune(r)
			i += 1 + w
		case '[':
			flush()
			tok, n, err := refParseClass(pattern[i:])
			if err != nil {
				return g, fmt.Errorf("pattern %q: character class at offset %d: %w", pattern, i, err)
			}
			g.toks = append(g.toks, tok)
			i += n
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	switch {
	case len(g.toks) == 1 && g.toks[0].kind == refLiteral:
		g.kind, g.lit = refExact, g.toks[0].lit
	case len(g.toks) == 1 && g.toks[0].kind == refStar:
		g.kind = refAny
	case len(g.toks) == 2 && g.toks[0].kind == refLiteral && g.toks[1].kind == refStar:
		g.kind, g.lit = refPrefix, g.toks[0].lit
	}
	return g, nil
}

// refParseClass parses the character class at the start of s (which begins
// with '[') and returns it and its length in bytes.
func refParseClass(s string) (refTok, int, error) {
	tok := refTok{kind: refClass}
	i := 1
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		tok.negate = true
		i++
	}
	readChar := func() (rune, error) {
		if i >= len(s) {
			return 0, fmt.Errorf("missing ']'")
		}
		switch s[i] {
		case '\\':
			i++
			if i >= len(s) {
				return 0, fmt.Errorf("trailing backslash")
			}
		case '-', ']':
			return 0, fmt.Errorf("unexpected %q (escape it with '\\')", s[i])
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		return r, nil
	}
	for {
		if i >= len(s) {
			return tok, 0, fmt.Errorf("missing ']'")
		}
		if s[i] == ']' && len(tok.ranges) > 0 {
			return tok, i + 1, nil
		}
		lo, err := readChar()
		if err != nil {
			return tok, 0, err
		}
		hi := lo
		if i < len(s) && s[i] == '-' {
			i++
			if hi, err = readChar(); err != nil {
				return tok, 0, err
			}
			if hi < lo {
				return tok, 0, fmt.Errorf("reversed range %q-%q", lo, hi)
			}
		}
		tok.ranges = append(tok.ranges, refRange{lo, hi})
	}
}

// match reports whether s matches the pattern as a whole.
func (g *refGlob) match(s string) bool {
	switch g.kind {
	case refExact:
		return s == g.lit
	case refPrefix:
		return strings.HasPrefix(s, g.lit)
	case refAny:
		return true
	}
	// Greedy matching with backtracking to the last star: every token but
	// '*' consumes a fixed text, so retrying only the last star suffices.
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(g.toks) {
			t := &g.toks[ti]
			if t.kind == refStar {
				starTi, starSi = ti, si
				ti++
				continue
			}
			if n, ok := t.matchAt(s[si:]); ok {
				si += n
				ti++
				continue
			}
		} else if si == len(s) {
			return true
		}
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starSi:])
		starSi += w
		ti, si = starTi+1, starSi
	}
}

// matchAt matches a non-star token at the start of s and returns the
// number of bytes it consumed.
func (t *refTok) matchAt(s string) (int, bool) {
	switch t.kind {
	case refLiteral:
		return len(t.lit), strings.HasPrefix(s, t.lit)
	case refOne:
		if s == "" {
			return 0, false
		}
		_, w := utf8.DecodeRuneInString(s)
		return w, true
	default: // refClass
		if s == "" {
			return 0, false
		}
		r, w := utf8.DecodeRuneInString(s)
		in := false
		for _, rr := range t.ranges {
			if rr.lo <= r && r <= rr.hi {
				in = true
				break
			}
		}
		return w, in != t.negate
	}
}
