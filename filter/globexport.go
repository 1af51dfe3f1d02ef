package filter

// Glob is a compiled shell pattern with the syntax of a scope's globs
// (see the package documentation): '*' and '?' also match '/', and a
// pattern must match the whole name. Other packages that take patterns
// from an administrator (the policy engine's allowlists) use it so that
// every pattern of nrikit reads the same. The zero Glob matches nothing
// but the empty string; a Glob is immutable and safe for concurrent use.
type Glob struct{ g glob }

// CompileGlob validates and compiles pattern: empty and malformed
// patterns (an unterminated class, a trailing backslash, invalid UTF-8)
// are errors.
func CompileGlob(pattern string) (Glob, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return Glob{}, err
	}
	return Glob{g: g}, nil
}

// Match reports whether s matches the whole pattern. It does not
// allocate.
func (g *Glob) Match(s string) bool { return g.g.match(s) }

// String returns the pattern.
func (g *Glob) String() string { return g.g.pattern }

// IsLiteral reports whether the pattern has no metacharacter, so that it
// matches one string only (the pattern with its escapes resolved).
func (g *Glob) IsLiteral() bool { return g.g.re == nil && !g.g.prefix }
