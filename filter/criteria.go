package filter

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// namespaceCriterion holds if the pod's namespace matches one of the globs.
type namespaceCriterion struct{ globs []glob }

func (c namespaceCriterion) matchPod(pod *api.PodSandbox) bool {
	return matchAny(c.globs, pod.GetNamespace())
}

func (c namespaceCriterion) matchContainer(pod *api.PodSandbox, _ *api.Container) bool {
	return c.matchPod(pod)
}

func (c namespaceCriterion) String() string { return "namespaces=" + globList(c.globs) }

// labelCriterion holds if the pod's labels satisfy the selector.
type labelCriterion struct{ sel *Selector }

func (c labelCriterion) matchPod(pod *api.PodSandbox) bool {
	return c.sel.Matches(pod.GetLabels())
}

func (c labelCriterion) matchContainer(pod *api.PodSandbox, _ *api.Container) bool {
	return c.matchPod(pod)
}

func (c labelCriterion) String() string {
	return "pod_label_selector=" + strconv.Quote(c.sel.String())
}

// podAnnotationCriterion holds if one of the conditions holds for the pod's
// annotations.
type podAnnotationCriterion struct{ ms []annotationMatcher }

func (c podAnnotationCriterion) matchPod(pod *api.PodSandbox) bool {
	return matchAnnotations(c.ms, pod.GetAnnotations())
}

func (c podAnnotationCriterion) matchContainer(pod *api.PodSandbox, _ *api.Container) bool {
	return c.matchPod(pod)
}

func (c podAnnotationCriterion) String() string {
	return "pod_annotations=" + annotationList(c.ms)
}

// handlerCriterion holds if the pod's runtime handler is one of handlers.
type handlerCriterion struct{ handlers []string }

func (c handlerCriterion) matchPod(pod *api.PodSandbox) bool {
	return slices.Contains(c.handlers, pod.GetRuntimeHandler())
}

func (c handlerCriterion) matchContainer(pod *api.PodSandbox, _ *api.Container) bool {
	return c.matchPod(pod)
}

func (c handlerCriterion) String() string { return "runtime_handlers=" + quoteList(c.handlers) }

// ctrAnnotationCriterion holds if one of the conditions holds for the
// container's annotations. It does not restrict pod events.
type ctrAnnotationCriterion struct{ ms []annotationMatcher }

func (ctrAnnotationCriterion) matchPod(*api.PodSandbox) bool { return true }

func (c ctrAnnotationCriterion) matchContainer(_ *api.PodSandbox, ctr *api.Container) bool {
	return matchAnnotations(c.ms, ctr.GetAnnotations())
}

func (c ctrAnnotationCriterion) String() string {
	return "container_annotations=" + annotationList(c.ms)
}

// nameCriterion holds if the container's name matches one of the globs. It
// does not restrict pod events.
type nameCriterion struct{ globs []glob }

func (nameCriterion) matchPod(*api.PodSandbox) bool { return true }

func (c nameCriterion) matchContainer(_ *api.PodSandbox, ctr *api.Container) bool {
	return matchAny(c.globs, ctr.GetName())
}

func (c nameCriterion) String() string { return "container_names=" + globList(c.globs) }

// imageCriterion holds if the container's image name matches one of the
// globs. It does not restrict pod events.
type imageCriterion struct{ globs []glob }

func (imageCriterion) matchPod(*api.PodSandbox) bool { return true }

func (c imageCriterion) matchContainer(_ *api.PodSandbox, ctr *api.Container) bool {
	return matchAny(c.globs, ctr.GetImage().GetName())
}

func (c imageCriterion) String() string { return "images=" + globList(c.globs) }

// annotationMatcher is one compiled AnnotationMatch.
type annotationMatcher struct {
	key   string
	op    api.AnnotationMatch_Op
	value string
	re    *regexp.Regexp // for REGEX
}

// compileAnnotations validates and compiles a list of annotation conditions.
func compileAnnotations(list []*api.AnnotationMatch) ([]annotationMatcher, error) {
	out := make([]annotationMatcher, 0, len(list))
	for i, am := range list {
		m, err := compileAnnotation(am)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func compileAnnotation(am *api.AnnotationMatch) (annotationMatcher, error) {
	m := annotationMatcher{key: am.GetKey(), op: am.GetOp(), value: am.GetValue()}
	if m.key == "" {
		return m, fmt.Errorf("empty annotation key")
	}
	switch m.op {
	case api.AnnotationMatch_EXISTS:
		if m.value != "" {
			return m, fmt.Errorf("annotation %q: op EXISTS takes no value (got %q; EQUALS or REGEX compare values)", m.key, m.value)
		}
	case api.AnnotationMatch_EQUALS:
	case api.AnnotationMatch_REGEX:
		re, err := regexp.Compile(`\A(?:` + m.value + `)\z`)
		if err != nil {
			return m, fmt.Errorf("annotation %q: invalid regular expression %q: %w", m.key, m.value, err)
		}
		m.re = re
	default:
		return m, fmt.Errorf("annotation %q: unknown op %d", m.key, int32(m.op))
	}
	return m, nil
}

// match reports whether the condition holds for annotations.
func (m *annotationMatcher) match(annotations map[string]string) bool {
	v, ok := annotations[m.key]
	if !ok {
		return false
	}
	switch m.op {
	case api.AnnotationMatch_EQUALS:
		return v == m.value
	case api.AnnotationMatch_REGEX:
		return m.re.MatchString(v)
	default:
		return true
	}
}

// String renders the condition: key (EXISTS), key="v" (EQUALS) or
// key=~"re" (REGEX).
func (m *annotationMatcher) String() string {
	switch m.op {
	case api.AnnotationMatch_EQUALS:
		return strconv.Quote(m.key) + "=" + strconv.Quote(m.value)
	case api.AnnotationMatch_REGEX:
		return strconv.Quote(m.key) + "=~" + strconv.Quote(m.value)
	default:
		return strconv.Quote(m.key)
	}
}

func matchAnnotations(ms []annotationMatcher, annotations map[string]string) bool {
	for i := range ms {
		if ms[i].match(annotations) {
			return true
		}
	}
	return false
}

func matchAny(globs []glob, s string) bool {
	for i := range globs {
		if globs[i].match(s) {
			return true
		}
	}
	return false
}

func globList(globs []glob) string {
	s := make([]string, len(globs))
	for i := range globs {
		s[i] = globs[i].pattern
	}
	return quoteList(s)
}

func annotationList(ms []annotationMatcher) string {
	s := make([]string, len(ms))
	for i := range ms {
		s[i] = ms[i].String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func quoteList(list []string) string {
	s := make([]string, len(list))
	for i, e := range list {
		s[i] = strconv.Quote(e)
	}
	return "[" + strings.Join(s, ",") + "]"
}
