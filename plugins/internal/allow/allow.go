// Package allow holds what the sample plugins that act on pod annotations
// (device-injector, ulimit-adjuster, gpu-env) share to check a pod's
// request against their configuration: the list of namespaces whose pods
// they serve, glob patterns, and the [Refusal] of a request, whose value
// is quoted within a bound for logs and errors (a pod's annotation is
// untrusted input, up to 256 KiB).
package allow

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is the number of bytes of a value [Quote] keeps.
const MaxQuoted = 128

// MaxEntries is the number of entries (devices, mounts, limits, ...) one
// annotation may hold; a longer list is refused before any entry is
// looked at.
const MaxEntries = 64

// Namespaces is a list of namespace patterns in path.Match syntax ('*',
// '?', '[a-z]'; a namespace name has no '/'), the same syntax as the
// plugins' -namespace scope flag. An empty list allows every namespace.
type Namespaces []string

// Validate checks every pattern.
func (n Namespaces) Validate() error {
	for i, p := range n {
		if err := CheckPattern(p); err != nil {
			return fmt.Errorf("namespaces[%d]: %w", i, err)
		}
	}
	return nil
}

// Allows reports whether a pod of namespace ns is served: n is empty or
// one of its patterns matches ns. Patterns must have been validated.
func (n Namespaces) Allows(ns string) bool {
	if len(n) == 0 {
		return true
	}
	for _, p := range n {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// CheckPattern checks a path.Match pattern: not empty, well formed.
func CheckPattern(p string) error {
	if p == "" {
		return fmt.Errorf("empty pattern")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("pattern %q: %w", p, err)
	}
	return nil
}

// MatchAny reports whether one of patterns (validated) matches s.
func MatchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// Quote returns s quoted as a Go string, cut to its first [MaxQuoted]
// bytes (on a rune boundary) with the full length noted if it is longer.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// Refusal is a request in a pod's annotation that the plugin's
// configuration does not allow. The plugins fail the container's
// creation with it, so that the pod's events say why, and log it.
type Refusal struct {
	// Annotation is the annotation's key.
	Annotation string
	// Entry names the refused entry of the annotation's list, such as
	// "device 2" (1-based), or is empty.
	Entry string
	// Value is the refused entry, as the plugin read it.
	Value string
	// Reason says which rule refuses it.
	Reason string
}

// Error returns "annotation KEY: ENTRY VALUE refused: REASON", the value
// quoted within [MaxQuoted] bytes.
func (r *Refusal) Error() string {
	entry := r.Entry
	if entry != "" {
		entry += " "
	}
	return fmt.Sprintf("annotation %s: %s%s refused: %s", r.Annotation, entry, Quote(r.Value), r.Reason)
}

// LogArgs returns the refusal as slog key-value pairs: annotation, entry,
// value (quoted within bounds) and reason.
func (r *Refusal) LogArgs() []any {
	return []any{"annotation", r.Annotation, "entry", r.Entry, "value", Quote(r.Value), "reason", r.Reason}
}

// HasDotDot reports whether p, a slash-separated path, has an element ".."
// (which could climb out of an allowed directory).
func HasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// Annotation returns the annotation of annotations (a pod's) that applies
// to the named container, as api.EffectiveAnnotation finds it, with its
// full key, so that a refusal names the annotation the pod wrote:
// "KEY/container.NAME" if present, else "KEY/pod", else "KEY".
func Annotation(annotations map[string]string, key, container string) (fullKey, value string, ok bool) {
	for _, k := range []string{key + "/container." + container, key + "/pod", key} {
		if v, ok := annotations[k]; ok {
			return k, v, true
		}
	}
	return "", "", false
}
