package filter

import (
	"path"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"kube-system", "kube-system", true},
		{"kube-system", "kube-system2", false},
		{"kube-*", "kube-system", true},
		{"kube-*", "kube-", true},
		{"kube-*", "kube", false},
		{"*", "", true},
		{"*", "a/b:c", true},
		{"*-system", "kube-system", true},
		{"*-system", "kube-system-x", false},
		{"k?be", "kube", true},
		{"k?be", "kbe", false},
		{"k?be", "kübe", true}, // '?' is one character, not one byte
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[^a-c]x", "dx", true},
		{"[!a-c]x", "ax", false},
		{"[abc]", "c", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`[\]]`, "]", true},
		// '*' and '?' cross '/', unlike path.Match.
		{"registry.io/gpu/*", "registry.io/gpu/cuda:12", true},
		{"registry.io/gpu/*", "registry.io/gpu/sub/cuda:12", true},
		{"registry.io/gpu/*", "registry.io/cpu/cuda:12", false},
		{"*/cuda:*", "nvcr.io/nvidia/cuda:12.4", true},
		{"*/cuda:1?", "nvcr.io/nvidia/cuda:12", true},
		{"*/cuda:1?", "nvcr.io/nvidia/cuda:123", false},
		{"docker.io/library/nginx:*", "docker.io/library/nginx:1.27", true},
		{"a?c", "a/c", true},
		// Backtracking.
		{"*a*b*c", "xxaxxbxxbxxc", true},
		{"*a*b*c", "xxaxxbxxbxx", false},
		{"a*a*a*a*b", strings.Repeat("a", 30), false},
		{"*ab", "aab", true},
		{"*?", "", false},
		{"*?", "x", true},
	}
	for _, tc := range tests {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tc.pattern, err)
			continue
		}
		if got := g.match(tc.name); got != tc.want {
			t.Errorf("glob %q match %q = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// TestGlobAgreesWithPathMatch checks that for names without '/' the
// matcher agrees with path.Match on the syntax both accept.
func TestGlobAgreesWithPathMatch(t *testing.T) {
	patterns := []string{"a*", "*b", "a?c", "[a-c]*", "[^x]y*", `\*x`, "*[0-9]", "a*b*c", "*"}
	names := []string{"", "a", "abc", "b", "cb", "x", "zy", "*x", "a1", "ab9", "aXbYc", "acb"}
	for _, p := range patterns {
		g, err := compileGlob(p)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", p, err)
		}
		for _, n := range names {
			want, err := path.Match(p, n)
			if err != nil {
				t.Fatalf("path.Match(%q): %v", p, err)
			}
			if got := g.match(n); got != want {
				t.Errorf("glob %q match %q = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}

func TestGlobInvalid(t *testing.T) {
	for _, p := range []string{"", "[", "[a", "[]", "[^]", "[a-]", "[z-a]", `a\`, `[\`, "[-a]"} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("compileGlob(%q) succeeded, want error", p)
		} else if p != "" && !strings.Contains(err.Error(), p) {
			t.Errorf("compileGlob(%q) error %q does not quote the pattern", p, err)
		}
	}
}

// TestCompileGlob checks the exported form of the globs: the same
// matches as scopes' globs, and the same errors.
func TestCompileGlob(t *testing.T) {
	g, err := CompileGlob("/dev/nvidia[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{"/dev/nvidia0": true, "/dev/nvidia12/x": true, "/dev/nvidiactl": false, "/dev/sda": false} {
		if g.Match(s) != want {
			t.Errorf("%s.Match(%q) = %v, want %v", g.String(), s, !want, want)
		}
	}
	if g.IsLiteral() {
		t.Error("a pattern with a class is not literal")
	}
	if lit, _ := CompileGlob(`a\*b`); !lit.IsLiteral() || !lit.Match("a*b") || lit.Match("axb") {
		t.Errorf("escaped star: literal %v", lit.IsLiteral())
	}
	for _, bad := range []string{"", "[a", `x\`} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("CompileGlob(%q) accepted", bad)
		}
	}
}
