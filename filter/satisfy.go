package filter

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nrikit/nrikit/api"
)

// Satisfy changes pod and ctr where the scope's criteria say what to
// change, so that f matches them, and reports whether f then matches the
// container (and so its pod). It sets the namespace to an instance of the
// first namespace pattern, labels that the label selector requires (and
// removes those it forbids), annotations that the annotation conditions
// require (an EXISTS or EQUALS condition; a REGEX one only if its
// expression is a plain string), the first runtime handler, and an
// instance of the first container name and image pattern. A CEL
// expression cannot be satisfied this way: Satisfy leaves the objects as
// they are for it, and reports whether they happen to match. Tools that
// need an object in a plugin's scope use it (the conformance checker);
// ctr may be nil for a pod alone.
func (f *Filter) Satisfy(pod *api.PodSandbox, ctr *api.Container) bool {
	if f == nil {
		return true
	}
	for _, c := range f.criteria {
		switch c := c.(type) {
		case namespaceCriterion:
			if !c.matchPod(pod) {
				if s, ok := c.globs[0].instance(); ok {
					pod.Namespace = s
				}
			}
		case labelCriterion:
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			c.sel.satisfy(pod.Labels)
		case podAnnotationCriterion:
			if !c.matchPod(pod) {
				pod.Annotations = satisfyAnnotation(c.ms[0], pod.Annotations)
			}
		case handlerCriterion:
			if !c.matchPod(pod) {
				pod.RuntimeHandler = c.handlers[0]
			}
		case ctrAnnotationCriterion:
			if ctr != nil && !c.matchContainer(pod, ctr) {
				ctr.Annotations = satisfyAnnotation(c.ms[0], ctr.Annotations)
			}
		case nameCriterion:
			if ctr != nil && !c.matchContainer(pod, ctr) {
				if s, ok := c.globs[0].instance(); ok {
					ctr.Name = s
				}
			}
		case imageCriterion:
			if ctr != nil && !c.matchContainer(pod, ctr) {
				if s, ok := c.globs[0].instance(); ok {
					if ctr.Image == nil {
						ctr.Image = &api.Image{}
					}
					ctr.Image.Name = s
				}
			}
		}
	}
	if ctr == nil {
		return f.MatchPod(pod)
	}
	return f.MatchContainer(pod, ctr)
}

// satisfy sets or removes labels so that the selector's requirements
// hold, one after the other (contradictory requirements cannot all hold;
// Matches then says so).
func (s *Selector) satisfy(labels map[string]string) {
	for _, r := range s.reqs {
		if r.matches(labels) {
			continue
		}
		switch r.op {
		case opEquals, opIn:
			labels[r.key] = r.values[0]
		case opExists:
			labels[r.key] = "true"
		default: // opNotEquals, opNotIn, opNotExists: the label must go
			delete(labels, r.key)
		}
	}
}

// isLiteralRegexp reports whether the regular expression re is a plain
// string: letters, digits and "_./: -" only. (A function, not a compiled
// regular expression in a package variable, whose initialisation every
// program importing the package would link and run: a WASM guest without
// a scope must not carry the regexp package.)
func isLiteralRegexp(re string) bool {
	for _, r := range re {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case strings.ContainsRune("_./: -", r):
		default:
			return false
		}
	}
	return true
}

// satisfyAnnotation returns annotations (a new map if nil) with the
// condition m made to hold where it can.
func satisfyAnnotation(m annotationMatcher, annotations map[string]string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	switch m.op {
	case api.AnnotationMatch_EQUALS:
		annotations[m.key] = m.value
	case api.AnnotationMatch_REGEX:
		if isLiteralRegexp(m.value) {
			annotations[m.key] = m.value
		}
	default:
		if _, ok := annotations[m.key]; !ok {
			annotations[m.key] = "true"
		}
	}
	return annotations
}

// instance returns a string the pattern matches, if one is found: its
// literal characters, nothing for '*', and for '?' and a character class
// the first printable ASCII character that fits.
func (g *glob) instance() (string, bool) {
	if g.re == nil {
		return g.lit, true // literal, or a literal prefix and '*'
	}
	var out []rune
	p := g.pattern
	for i := 0; i < len(p); {
		r, w := utf8.DecodeRuneInString(p[i:])
		switch r {
		case '*':
		case '?':
			out = append(out, 'x')
		case '[':
			class, n, err := translateClass(p[i:])
			if err != nil {
				return "", false
			}
			c, ok := firstInClass(class)
			if !ok {
				return "", false
			}
			out = append(out, c)
			w = n
		case '\\':
			r, n := utf8.DecodeRuneInString(p[i+w:])
			out = append(out, r)
			w += n
		default:
			out = append(out, r)
		}
		i += w
	}
	s := string(out)
	return s, g.match(s)
}

// firstInClass returns the first printable ASCII character (letters and
// digits first) that the regular expression class matches.
func firstInClass(class string) (rune, bool) {
	re, err := regexp.Compile(`\A` + class + `\z`)
	if err != nil {
		return 0, false
	}
	const order = "xabcdefghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
	for _, c := range order {
		if re.MatchString(string(c)) {
			return c, true
		}
	}
	for c := rune(0x21); c < 0x7f; c++ {
		if re.MatchString(string(c)) {
			return c, true
		}
	}
	return 0, false
}
