// Package apidiff lists what one Go module's packages lack of another's
// API: every exported top-level name of each package, every exported
// method and field of its exported types (and every method of its
// interfaces, which implementations must have), with kinds, signatures
// and constant values compared, for a given platform. Named types are
// compared by name, so a module whose types are aliases of another
// module's (compat/nri's of nrikit's) compares as the module it imitates.
//
// Packages are type-checked from source, declarations only, as go list
// resolves them for the platform: nothing is compiled, so a cold build
// cache costs nothing. The command cmd/apidiff runs it for a test built
// with the race detector, which would slow type-checking tenfold.
package apidiff

import (
	"fmt"
	"strings"
)

// Platform is a GOOS and GOARCH.
type Platform struct {
	GOOS, GOARCH string
}

func (p Platform) String() string { return p.GOOS + "/" + p.GOARCH }

// ParsePlatform parses "GOOS/GOARCH".
func ParsePlatform(s string) (Platform, error) {
	goos, goarch, ok := strings.Cut(s, "/")
	if !ok || goos == "" || goarch == "" {
		return Platform{}, fmt.Errorf("apidiff: platform %q: want GOOS/GOARCH", s)
	}
	return Platform{goos, goarch}, nil
}

// Result is the comparison on one platform.
type Result struct {
	// Findings are the differences, sorted by key.
	Findings []Finding
	// Unbuilt are the packages (paths in the module) that upstream's
	// module does not build for the platform, and why; they are not
	// compared.
	Unbuilt map[string]string
}

// Diff compares the packages rels (paths in module, "" for its root) of
// module as resolved from the module in upstreamDir with the same
// packages resolved from the module in otherDir (which replaces module,
// or is a module of that path), built for p.
func Diff(module string, rels []string, upstreamDir, otherDir string, p Platform) (Result, error) {
	paths := make([]string, len(rels))
	for i, rel := range rels {
		paths[i] = module
		if rel != "" {
			paths[i] += "/" + rel
		}
	}
	env := []string{"GOOS=" + p.GOOS, "GOARCH=" + p.GOARCH, "GOWORK=off"}
	up, upErrs, err := loadPackages(upstreamDir, env, paths)
	if err != nil {
		return Result{}, fmt.Errorf("apidiff: upstream (%s): %w", upstreamDir, err)
	}
	other, otherErrs, err := loadPackages(otherDir, env, paths)
	if err != nil {
		return Result{}, fmt.Errorf("apidiff: %s: %w", otherDir, err)
	}
	res := Result{Unbuilt: map[string]string{}}
	c := newComparer()
	for i, rel := range rels {
		u, ok := up[paths[i]]
		if !ok {
			res.Unbuilt[rel] = firstLine(upErrs[paths[i]])
			continue
		}
		o, ok := other[paths[i]]
		if !ok {
			res.Findings = append(res.Findings, Finding{relKey(rel), "package does not build: " + firstLine(otherErrs[paths[i]])})
			continue
		}
		res.Findings = append(res.Findings, c.comparePackages(rel, u, o)...)
	}
	sortFindings(res.Findings)
	return res, nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// relKey is a package's key prefix: its path in the module, "nri" for the
// root.
func relKey(rel string) string {
	if rel == "" {
		return "nri"
	}
	return rel
}
