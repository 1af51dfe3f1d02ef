package core

import (
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// eventsForNRIVersion returns the events the NRI version v delivers, and
// false if v is not a version of the ttrpc protocol (unparsable, or before
// the first event's release, v0.2.0). An event is delivered from the
// release its row of the event table names (api.EventInfo.Since) on: by
// that version exactly and by every later release; a Go pseudo-version
// there (a pre-release of the next patch) holds for itself and the
// releases after its patch, not for other pre-releases of that patch.
func eventsForNRIVersion(v string) (api.EventMask, bool) {
	v = strings.TrimSpace(v)
	sv, ok := parseVersion(v)
	if !ok {
		return 0, false
	}
	var events api.EventMask
	for _, e := range api.Events() {
		since := e.Info().Since
		first, _ := parseVersion(since)
		first.pre = false
		if v == since || sv.compare(first) >= 0 {
			events = events.Set(e)
		}
	}
	return events, events != 0
}

// oldestEvents is the event set assumed for a runtime whose NRI version
// cannot be determined: that of the first release of the ttrpc protocol.
func oldestEvents() api.EventMask {
	m, _ := eventsForNRIVersion("v0.2.0")
	return m
}

// runtimeNRIVersions maps runtime releases to the NRI version they were
// built with, as in upstream's InferVersionFromRuntime table. Each entry
// holds from its runtime version up to the next entry. Runtime versions
// before the first entry predate the ttrpc protocol.
var runtimeNRIVersions = map[string][]struct{ runtime, nri string }{
	"containerd": {
		{"v1.7.0", "v0.3.0"},
		{"v1.7.7", "v0.4.0"},
		{"v1.7.14", "v0.6.0"},
		{"v1.7.16", "v0.6.1"},
		{"v1.7.26", "v0.8.0"}, // also v2.0.x and v2.1.x
		{"v2.2.0", "v0.10.0"},
		{"v2.2.1", "v0.11.0"},
	},
	"cri-o": {
		{"v1.26.0", "v0.2.0"},
		{"v1.26.2", "v0.3.0"},
		{"v1.26.4", "v0.3.1-0.20230504231226-94185418e253"},
		{"v1.27.0", "v0.3.0"},
		{"v1.27.1", "v0.3.1-0.20230504231226-94185418e253"},
		{"v1.29.0", "v0.5.0"},
		{"v1.29.2", "v0.6.0"},
		{"v1.31.0", "v0.6.1"},
		{"v1.32.0", "v0.9.0"},
		{"v1.33.0", "v0.9.1-0.20250219030224-e597e7849f24"},
		{"v1.34.0", "v0.10.0"},
		{"v1.35.0", "v0.11.0"},
	},
}

// inferNRIVersion returns the NRI version a runtime release was built
// with, or false if the runtime or release is not known.
func inferNRIVersion(runtime, version string) (string, bool) {
	table, ok := runtimeNRIVersions[strings.ToLower(strings.TrimSpace(runtime))]
	if !ok {
		return "", false
	}
	rv, ok := parseVersion(version)
	if !ok {
		return "", false
	}
	nri := ""
	for _, e := range table {
		ev, _ := parseVersion(e.runtime)
		if rv.compare(ev) < 0 {
			break
		}
		nri = e.nri
	}
	return nri, nri != ""
}

// isUnknownNRIVersion reports whether v is one of the placeholders
// runtimes report when they do not know their NRI version.
func isUnknownNRIVersion(v string) bool {
	switch strings.TrimSpace(v) {
	case "", "unknown", "(devel)", "0.0.0-unknown", "v0.0.0-unknown":
		return true
	}
	return false
}

// version is a parsed release version: major.minor.patch and whether it
// is a pre-release (which sorts before the release).
type version struct {
	num [3]uint64
	pre bool
}

// parseVersion parses versions leniently: an optional "v", then
// MAJOR[.MINOR[.PATCH]]. A "-" suffix makes it a pre-release, unless it is
// a git-describe suffix ("-N-gHASH[.m]", commits after the release); any
// other suffix ("+build", "~ds1") is ignored.
func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	var v version
	for i := 0; i < 3; i++ {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 {
			return version{}, false
		}
		num, err := strconv.ParseUint(s[:n], 10, 64)
		if err != nil {
			return version{}, false
		}
		v.num[i] = num
		s = s[n:]
		if i < 2 {
			if !strings.HasPrefix(s, ".") {
				break
			}
			s = s[1:]
		}
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		v.pre = !isGitDescribe(rest)
	}
	return v, true
}

// isGitDescribe reports whether s is "N-gHEX" optionally followed by ".…".
func isGitDescribe(s string) bool {
	n, rest, ok := strings.Cut(s, "-g")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return false
	}
	hash, _, _ := strings.Cut(rest, ".")
	return hash != "" && strings.Trim(strings.ToLower(hash), "0123456789abcdef") == ""
}

// compare returns -1, 0 or 1 as v is before, equal to or after w.
func (v version) compare(w version) int {
	for i := range v.num {
		switch {
		case v.num[i] < w.num[i]:
			return -1
		case v.num[i] > w.num[i]:
			return 1
		}
	}
	switch {
	case v.pre == w.pre:
		return 0
	case v.pre:
		return -1
	default:
		return 1
	}
}
