package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/identity"
)

// Policy is a compiled policy file: immutable, safe for concurrent use.
// The nil *Policy is "no policy": every plugin may do everything.
type Policy struct {
	file         string
	grants       []*Grant
	def          *Grant
	required     []string
	requirements []requirement
	// none is the grant of nothing of a plugin whose identity meets no
	// grant (see GrantForIdentity).
	none *Grant
	// warnings are what Warnings returns.
	warnings []*Error
}

// Grant is what one plugin may do: compiled rules, immutable and safe for
// concurrent use. The nil *Grant allows everything (no policy).
type Grant struct {
	label    string // "policy.yaml:7: grants[1]"
	action   Action
	patterns []pluginPattern
	identity identityRule
	where    *api.PluginScope
	filter   *filter.Filter
	caps     capability.Set
	adjust   adjustRules
	update   resourceRules
	// rules names, by capability, the rule of the file that decides it:
	// "policy.yaml:12: grants[1].adjust.mounts", or the grant's label
	// and the missing key.
	rules [capability.Count]string
}

// pluginPattern matches plugins by identity.
type pluginPattern struct {
	text string
	kind patternKind
	glob filter.Glob
}

type patternKind uint8

const (
	byName patternKind = iota
	byFullName
	byIndex
	byGlob
)

// match reports whether the plugin idx-name matches.
func (p *pluginPattern) match(idx, name, full string) bool {
	switch p.kind {
	case byFullName:
		return full == p.text
	case byIndex:
		return idx == p.text
	case byGlob:
		return p.glob.Match(full) || p.glob.Match(name)
	}
	return name == p.text
}

// File returns the policy's file name as given to Parse.
func (p *Policy) File() string {
	if p == nil {
		return ""
	}
	return p.file
}

// GrantFor returns the grant of the launched plugin idx-name
// (pre-installed, WASM, builtin: who its file or registration in the
// runtime says, which meets every identity section): that of the first
// entry of grants (in the file's order) with a pattern that matches it,
// else the default grant (a grant of nothing if the file has none). An
// external plugin's grant depends on its identity: GrantForIdentity. On
// the nil *Policy it returns nil, which allows everything.
func (p *Policy) GrantFor(idx, name string) *Grant {
	g, _ := p.GrantForIdentity(idx, name, launched)
	return g
}

// launched is the identity GrantFor resolves grants for.
var launched = identity.Launched(identity.Builtin, "")

// Grants returns the grants in the file's order, then the default one.
func (p *Policy) Grants() []*Grant {
	if p == nil {
		return nil
	}
	return append(slices.Clone(p.grants), p.def)
}

// Required returns the plugins (NAME or IDX-NAME) that must be present
// for pods and containers to be created: present, that is registered
// with an identity that meets their entry (a runtime refuses a plugin
// that registers under a required name without it, see
// GrantForIdentity).
func (p *Policy) Required() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.required)
}

// String describes the grant for logs: where it is in the file ("policy.yaml:7: grants[1]",
// "policy.yaml:30: default", "policy.yaml: no default grant"), or "no policy" for
// the nil grant.
func (g *Grant) String() string {
	if g == nil {
		return "no policy"
	}
	return g.label
}

// Plugins returns the grant's plugin patterns (none for the default
// grant).
func (g *Grant) Plugins() []string {
	if g == nil {
		return nil
	}
	out := make([]string, len(g.patterns))
	for i := range g.patterns {
		out[i] = g.patterns[i].text
	}
	return out
}

// Where returns the scope the administrator imposes on the plugin, which
// the runtime ANDs with the plugin's own scope (filter.And of both
// compiled filters; see WhereFilter): nil for everywhere. The caller must
// not modify it.
func (g *Grant) Where() *api.PluginScope {
	if g == nil {
		return nil
	}
	return g.where
}

// WhereFilter returns Where compiled, nil for everywhere.
func (g *Grant) WhereFilter() *filter.Filter {
	if g == nil {
		return nil
	}
	return g.filter
}

// Capabilities returns the kinds of change the grant allows (within its
// value rules): the runtime intersects them with what it applies at all
// and tells the plugin at Configure. The nil grant has All.
func (g *Grant) Capabilities() capability.Set {
	if g == nil {
		return capability.All()
	}
	return g.caps
}

// Rule names the rule of the policy that decides changes of kind c for
// this grant, as Violation.Rule does.
func (g *Grant) Rule(c capability.Capability) string {
	if g == nil || int(c) >= capability.Count {
		return "no policy"
	}
	return g.rules[c]
}

// Summary describes the grant in one line for `nri check policy`: its
// plugins, the identity they must have, where, and its capabilities.
func (g *Grant) Summary() string {
	if g == nil {
		return "no policy: everything"
	}
	var b strings.Builder
	b.WriteString(g.label)
	if len(g.patterns) > 0 {
		fmt.Fprintf(&b, " plugins=%s", strings.Join(g.Plugins(), ","))
	}
	if g.identity.mode != launchedOnly || len(g.patterns) > 0 || !g.caps.Empty() {
		b.WriteString(" identity=" + g.identity.String()) // not for the grant of nothing of no default
	}
	b.WriteString(" where=" + g.filter.String())
	b.WriteString(" allows=" + g.caps.String())
	if g.action == ActionAudit {
		b.WriteString(" action=audit")
	}
	return b.String()
}
