package filter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// glob is a compiled shell pattern (see the package documentation). Unlike
// path.Match, '*' and '?' also match '/', so that "registry.io/gpu/*"
// matches "registry.io/gpu/cuda:12". A pattern is translated to a regular
// expression; literal patterns and literal prefixes followed by one final
// '*', the common shapes, are matched without it.
type glob struct {
	pattern string
	lit     string         // the literal text, or the prefix before a final '*'
	prefix  bool           // the pattern is lit followed by '*'
	re      *regexp.Regexp // nil for the literal shapes
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
// character c literally. A pattern must be valid UTF-8.
func compileGlob(pattern string) (glob, error) {
	g := glob{pattern: pattern}
	switch {
	case pattern == "":
		return g, errors.New("empty pattern")
	case !utf8.ValidString(pattern):
		return g, fmt.Errorf("pattern %q: not valid UTF-8", pattern)
	}
	var expr, lit strings.Builder
	metas := 0 // metacharacters seen; the literal shapes have at most a final '*'
	for i := 0; i < len(pattern); {
		r, w := utf8.DecodeRuneInString(pattern[i:])
		switch r {
		case '*':
			metas++
			g.prefix = metas == 1 && i+w == len(pattern)
			expr.WriteString(".*")
		case '?':
			metas++
			expr.WriteByte('.')
		case '[':
			metas++
			class, n, err := translateClass(pattern[i:])
			if err != nil {
				return g, fmt.Errorf("pattern %q: character class at offset %d: %w", pattern, i, err)
			}
			expr.WriteString(class)
			w = n
		default:
			if r == '\\' {
				if i+w == len(pattern) {
					return g, fmt.Errorf("pattern %q: trailing backslash", pattern)
				}
				var n int
				r, n = utf8.DecodeRuneInString(pattern[i+w:])
				w += n
			}
			expr.WriteString(regexp.QuoteMeta(string(r)))
			lit.WriteRune(r)
		}
		i += w
	}
	if g.lit = lit.String(); metas == 0 || (metas == 1 && g.prefix) {
		return g, nil
	}
	g.prefix = false
	re, err := regexp.Compile(`\A(?s:` + expr.String() + `)\z`)
	if err != nil {
		return g, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	g.re = re
	return g, nil
}

// translateClass translates the character class at the start of s (which
// begins with '[') to a regular expression class and returns it and the
// class's length in s.
func translateClass(s string) (string, int, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := 1
	if i < len(s) && (s[i] == '^' || s[i] == '!') {
		b.WriteByte('^')
		i++
	}
	readChar := func() (rune, error) {
		if i >= len(s) {
			return 0, errors.New("missing ']'")
		}
		switch s[i] {
		case '\\':
			if i++; i >= len(s) {
				return 0, errors.New("trailing backslash")
			}
		case '-', ']':
			return 0, fmt.Errorf("unexpected %q (escape it with '\\')", s[i])
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		return r, nil
	}
	for empty := true; ; empty = false {
		if i < len(s) && s[i] == ']' && !empty {
			return b.String() + "]", i + 1, nil
		}
		lo, err := readChar()
		if err != nil {
			return "", 0, err
		}
		hi := lo
		if i < len(s) && s[i] == '-' {
			i++
			if hi, err = readChar(); err != nil {
				return "", 0, err
			}
			if hi < lo {
				return "", 0, fmt.Errorf("reversed range %q-%q", lo, hi)
			}
		}
		fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, hi)
	}
}

// match reports whether s matches the pattern as a whole.
func (g *glob) match(s string) bool {
	switch {
	case g.re != nil:
		return g.re.MatchString(s)
	case g.prefix:
		return strings.HasPrefix(s, g.lit)
	}
	return s == g.lit
}
