// Package version is upstream's pkg/version for compat/nri: the NRI
// version a program speaks, and matching a version against a list.
package version

import (
	"slices"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
)

const (
	// UnknownVersion is reported when the version cannot be determined.
	UnknownVersion = "0.0.0-unknown"
	// DevelVersion is the version Go reports for a module built from
	// its own tree.
	DevelVersion = "(devel)"
)

// GetFromBuildInfo returns the NRI version the program speaks. Upstream
// reads it from the version of github.com/containerd/nri in the
// program's build information; a program built on compat/nri replaces
// that module with a directory, which has no version, so this is the
// protocol version nrikit implements (api.NRIVersion).
func GetFromBuildInfo() string { return api.NRIVersion }

// FindClosestMatch returns the largest of versions (semantic versions,
// "vMAJOR.MINOR.PATCH[-PRE][+BUILD]") not greater than v, or "" if there
// is none. A git-described suffix of v ("-N-gSHA[.m]") is dropped first:
// such a build comes after its tag, not before it as a pre-release
// would. versions is sorted in place, as upstream's does.
func FindClosestMatch(v string, versions []string) string {
	v = stripGitSuffix(v)
	slices.SortFunc(versions, compare)
	latest := ""
	for _, ver := range versions {
		if compare(ver, v) > 0 {
			break
		}
		latest = ver
	}
	return latest
}

// semver is a parsed semantic version.
type semver struct {
	num [3]string // decimal, without leading zeros
	pre string
}

// parse parses v: a "v", one to three numbers (missing ones are zero),
// then, with all three numbers only, a pre-release and build metadata.
func parse(v string) (semver, bool) {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return semver{}, false
	}
	rest, build, hasBuild := strings.Cut(rest, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) > 3 || (len(parts) < 3 && (hasPre || hasBuild)) {
		return semver{}, false
	}
	if (hasBuild && !validIdentifiers(build, false)) || (hasPre && !validIdentifiers(pre, true)) {
		return semver{}, false
	}
	s := semver{num: [3]string{"0", "0", "0"}, pre: pre}
	for i, p := range parts {
		if !isNum(p) || (len(p) > 1 && p[0] == '0') {
			return semver{}, false
		}
		s.num[i] = p
	}
	return s, true
}

// validIdentifiers checks dot-separated identifiers of [0-9A-Za-z-],
// numeric pre-release ones without leading zeros.
func validIdentifiers(s string, pre bool) bool {
	for id := range strings.SplitSeq(s, ".") {
		if id == "" || strings.IndexFunc(id, func(r rune) bool {
			return !(r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
		}) >= 0 {
			return false
		}
		if pre && isNum(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

func isNum(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// compare orders versions by semantic version precedence; invalid ones
// come first and are equal to each other.
func compare(a, b string) int {
	va, okA := parse(a)
	vb, okB := parse(b)
	switch {
	case !okA && !okB:
		return 0
	case !okA:
		return -1
	case !okB:
		return 1
	}
	for i := range va.num {
		if c := compareNum(va.num[i], vb.num[i]); c != 0 {
			return c
		}
	}
	return comparePre(va.pre, vb.pre)
}

// compareNum compares decimal numbers without leading zeros.
func compareNum(x, y string) int {
	if len(x) != len(y) {
		return len(x) - len(y)
	}
	return strings.Compare(x, y)
}

// comparePre compares pre-releases: none sorts last; identifiers compare
// numerically if both are numbers, numbers before words, else as text.
func comparePre(x, y string) int {
	switch {
	case x == y:
		return 0
	case x == "":
		return 1
	case y == "":
		return -1
	}
	xs, ys := strings.Split(x, "."), strings.Split(y, ".")
	for i := 0; i < len(xs) && i < len(ys); i++ {
		dx, dy := xs[i], ys[i]
		if dx == dy {
			continue
		}
		nx, ny := isNum(dx), isNum(dy)
		switch {
		case nx && ny:
			return compareNum(dx, dy)
		case nx:
			return -1
		case ny:
			return 1
		}
		return strings.Compare(dx, dy)
	}
	return len(xs) - len(ys)
}

// stripGitSuffix turns "vX.Y.Z-N-gSHA[.m]" into "vX.Y.Z" and leaves other
// versions alone.
func stripGitSuffix(v string) string {
	s, ok := parse(v)
	if !ok || s.pre == "" || strings.Contains(v, "+") {
		return v
	}
	commits, g, ok := strings.Cut(s.pre, "-")
	if !ok || !strings.HasPrefix(g, "g") {
		return v
	}
	sha, _, _ := strings.Cut(g[1:], ".")
	if _, err := strconv.ParseUint(commits, 10, 64); err != nil {
		return v
	}
	if _, err := strconv.ParseUint(sha, 16, 64); err != nil {
		return v
	}
	return "v" + strings.Join(s.num[:], ".")
}
