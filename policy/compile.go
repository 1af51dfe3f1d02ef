package policy

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
)

// compile compiles the document; mistakes go to c.errs.
func (c *compiler) compile(doc *Document) *Policy {
	p := &Policy{file: c.file}
	if doc.Version != 0 && doc.Version != 1 {
		c.errorf([]any{"version"}, "unknown version %d: want 1", doc.Version)
	}
	c.action = c.parseAction([]any{"action"}, doc.Action, ActionDeny)
	c.required(p, doc.Required)
	for i := range doc.Grants {
		where := []any{"grants", i}
		spec := &doc.Grants[i]
		if len(spec.Plugins) == 0 {
			c.errorf(where, "no plugins: say which plugins the grant is for (IDX-NAME, NAME, index or glob)")
		}
		p.grants = append(p.grants, c.grant(where, fmt.Sprintf("%s:%d: grants[%d]", c.file, c.line(where), i), spec))
	}
	if doc.Default != nil {
		where := []any{"default"}
		if len(doc.Default.Plugins) > 0 {
			c.errorf(at(where, "plugins"), "the default grant is for the plugins no grant names: it takes no plugins")
		}
		p.def = c.grant(where, fmt.Sprintf("%s:%d: default", c.file, c.line(where)), doc.Default)
	} else {
		p.def = c.grant([]any{"default"}, c.file+": no default grant", &GrantSpec{})
	}
	p.none = c.grant([]any{"grants"}, c.file+": no grant for the plugin's identity", &GrantSpec{})
	p.warnings = c.identityWarnings(doc)
	return p
}

// checkPluginRef checks a plugin named by NAME or IDX-NAME.
func checkPluginRef(r string) error {
	if idx, name, ok := strings.Cut(r, "-"); ok && api.CheckPluginIndex(idx) == nil {
		return api.CheckPluginName(name)
	}
	return api.CheckPluginName(r)
}

// grant compiles one grant.
func (c *compiler) grant(where []any, label string, spec *GrantSpec) *Grant {
	g := &Grant{label: label, action: c.parseAction(at(where, "action"), spec.Action, c.action),
		identity: c.identityRule(at(where, "identity"), label, spec.Identity)}
	for i, text := range spec.Plugins {
		pp, err := compilePattern(text)
		if err != nil {
			c.errorf(at(where, "plugins", i), "%v", err)
			continue
		}
		g.patterns = append(g.patterns, pp)
	}
	if spec.Where != nil {
		g.where = spec.Where.scope()
		f, err := filter.Compile(g.where, c.cfg.filterOpts...)
		if err != nil {
			c.errorf(at(where, "where"), "%v", strings.TrimPrefix(err.Error(), "filter: "))
		}
		g.filter = f
	}
	for cp := range capability.Capability(capability.Count) {
		g.rules[cp] = fmt.Sprintf("%s (no %s)", label, specKey(cp))
	}
	if spec.Adjust != nil {
		c.adjust(g, at(where, "adjust"), spec.Adjust)
	}
	if spec.Update != nil {
		g.update = c.resources(g, at(where, "update"), spec.Update, true)
	}
	if spec.Evict {
		c.allow(g, capability.Evict, at(where, "evict"))
	}
	return g
}

// parseAction returns the action of name at path, def if it is absent;
// an unknown one is a mistake.
func (c *compiler) parseAction(path []any, name string, def Action) Action {
	a, ok := parseAction(name, def)
	if !ok {
		c.errorf(path, "unknown action %q: want deny or audit", name)
	}
	return a
}

// allow records that the grant allows cp, decided by the rule at path.
func (c *compiler) allow(g *Grant, cp capability.Capability, path []any) {
	g.caps = g.caps.With(cp)
	g.rules[cp] = fmt.Sprintf("%s:%d: %s", c.file, c.line(path), pathString(path))
}

// specKey is the key of the policy file that grants cp, for messages:
// the capability's path in camel case, adjustments under "adjust." (without
// "linux."), updates under "update." (without "linux.resources."); a grant
// of a class field lists classes ("blockioClasses").
func specKey(cp capability.Capability) string {
	f, ok := cp.Field()
	if !ok {
		return cp.String()
	}
	key := "adjust." + strings.TrimPrefix(f.Path, "linux.")
	if f.Update {
		key = "update." + strings.TrimPrefix(f.Path, "linux.resources.")
	}
	return camelCase(key) + classesSuffix(key)
}

// camelCase turns the proto names of a dotted path into the policy file's
// ("cdi_devices" into "cdiDevices").
func camelCase(path string) string {
	var b strings.Builder
	upper := false
	for i, r := range strings.ToLower(path) {
		switch {
		case r == '_' && i > 0:
			upper = true
		case upper:
			b.WriteRune(unicode.ToUpper(r))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func classesSuffix(key string) string {
	if strings.HasSuffix(key, "_class") {
		return "es"
	}
	return ""
}

// compilePattern compiles a plugin pattern.
func compilePattern(text string) (pluginPattern, error) {
	p := pluginPattern{text: text}
	switch {
	case strings.ContainsAny(text, `*?[\`):
		g, err := filter.CompileGlob(text)
		if err != nil {
			return p, err
		}
		p.kind, p.glob = byGlob, g
	case api.CheckPluginIndex(text) == nil:
		p.kind = byIndex
	default:
		if idx, name, ok := strings.Cut(text, "-"); ok && api.CheckPluginIndex(idx) == nil {
			if err := api.CheckPluginName(name); err != nil {
				return p, err
			}
			p.kind = byFullName
			return p, nil
		}
		if err := api.CheckPluginName(text); err != nil {
			return p, err
		}
		p.kind = byName
	}
	return p, nil
}

// scope returns the where scope as an api.PluginScope.
func (w *WhereSpec) scope() *api.PluginScope {
	s := &api.PluginScope{
		Namespaces:       w.Namespaces,
		PodLabelSelector: w.PodLabelSelector,
		RuntimeHandlers:  w.RuntimeHandlers,
		ContainerNames:   w.ContainerNames,
		Images:           w.Images,
		Cel:              w.CEL,
	}
	for _, m := range w.PodAnnotations {
		s.PodAnnotations = append(s.PodAnnotations, m.match())
	}
	for _, m := range w.ContainerAnnotations {
		s.ContainerAnnotations = append(s.ContainerAnnotations, m.match())
	}
	return s
}

// match converts the condition; an unknown op becomes an invalid enum
// value, which filter.Compile refuses with the annotation's key.
func (m *AnnotationMatch) match() *api.AnnotationMatch {
	op := api.AnnotationMatch_Op(-1)
	switch strings.ToLower(m.Op) {
	case "", "exists":
		op = api.AnnotationMatch_EXISTS
	case "equals":
		op = api.AnnotationMatch_EQUALS
	case "regex":
		op = api.AnnotationMatch_REGEX
	}
	return &api.AnnotationMatch{Key: m.Key, Op: op, Value: m.Value}
}

// globs compiles a list of globs at path.
func (c *compiler) globs(path []any, patterns []string) globList {
	out := make(globList, 0, len(patterns))
	for i, p := range patterns {
		g, err := filter.CompileGlob(p)
		if err != nil {
			c.errorf(at(path, i), "%v", err)
			continue
		}
		out = append(out, g)
	}
	return out
}

// absClean reports whether p is an absolute, clean path.
func absClean(p string) bool { return path.IsAbs(p) && path.Clean(p) == p }

// enumSet compiles names of an enum (values by name, as api's generated
// maps) into a bit set of their values.
func (c *compiler) enumSet(path []any, names []string, values map[string]int32, what string) uint64 {
	var set uint64
	for i, n := range names {
		v, ok := values[n]
		if !ok || v < 0 || v >= 64 {
			c.errorf(at(path, i), "unknown %s %q", what, n)
			continue
		}
		set |= 1 << v
	}
	return set
}
