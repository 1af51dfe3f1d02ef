package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// globKind selects a fast path for common pattern shapes.
type globKind uint8

const (
	globGeneral globKind = iota // token-by-token matching
	globExact                   // no metacharacters: string equality
	globPrefix                  // "lit*"
	globAny                     // "*"
)

// tokKind is the kind of one pattern token.
type tokKind uint8

const (
	tokLiteral tokKind = iota // a literal string
	tokOne                    // ?: any single character
	tokStar                   // *: any sequence, '/' included
	tokClass                  // [...]: one character of a class
)

// runeRange is an inclusive range of a character class.
type runeRange struct{ lo, hi rune }

// globTok is one token of a compiled pattern.
type globTok struct {
	kind   tokKind
	lit    string      // tokLiteral
	negate bool        // tokClass
	ranges []runeRange // tokClass
}

// glob is a compiled shell pattern. Unlike path.Match, '*' and '?' also
// match '/', so that "registry.io/gpu/*" matches "registry.io/gpu/cuda:12".
type glob struct {
	pattern string
	kind    globKind
	lit     string // globExact, globPrefix
	toks    []globTok
}

// compileGlobs compiles a list of patterns.
func compileGlobs(patterns []string) ([]glob, error) {
	out := make([]glob, 0, len(patterns))
	for _, p := range patterns {
		g, err := compileGlob(p)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// compileGlob validates and compiles one pattern: '*' matches any sequence
// of characters, '?' any one character, '[abc]', '[a-z]' one character of a
// class, '[^a-z]' or '[!a-z]' one character not in it, and '\c' the
// character c literally.
func compileGlob(pattern string) (glob, error) {
	g := glob{pattern: pattern}
	if pattern == "" {
		return g, fmt.Errorf("empty pattern")
	}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, globTok{kind: tokLiteral, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); {
		switch c := pattern[i]; c {
		case '*':
			flush()
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != tokStar {
				g.toks = append(g.toks, globTok{kind: tokStar})
			}
			i++
		case '?':
			flush()
			g.toks = append(g.toks, globTok{kind: tokOne})
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
			tok, n, err := parseClass(pattern[i:])
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
	case len(g.toks) == 1 && g.toks[0].kind == tokLiteral:
		g.kind, g.lit = globExact, g.toks[0].lit
	case len(g.toks) == 1 && g.toks[0].kind == tokStar:
		g.kind = globAny
	case len(g.toks) == 2 && g.toks[0].kind == tokLiteral && g.toks[1].kind == tokStar:
		g.kind, g.lit = globPrefix, g.toks[0].lit
	}
	return g, nil
}

// parseClass parses the character class at the start of s (which begins
// with '[') and returns it and its length in bytes.
func parseClass(s string) (globTok, int, error) {
	tok := globTok{kind: tokClass}
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
		tok.ranges = append(tok.ranges, runeRange{lo, hi})
	}
}

// match reports whether s matches the pattern as a whole.
func (g *glob) match(s string) bool {
	switch g.kind {
	case globExact:
		return s == g.lit
	case globPrefix:
		return strings.HasPrefix(s, g.lit)
	case globAny:
		return true
	}
	// Greedy matching with backtracking to the last star: every token but
	// '*' consumes a fixed text, so retrying only the last star suffices.
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(g.toks) {
			t := &g.toks[ti]
			if t.kind == tokStar {
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
func (t *globTok) matchAt(s string) (int, bool) {
	switch t.kind {
	case tokLiteral:
		return len(t.lit), strings.HasPrefix(s, t.lit)
	case tokOne:
		if s == "" {
			return 0, false
		}
		_, w := utf8.DecodeRuneInString(s)
		return w, true
	default: // tokClass
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
