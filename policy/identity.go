package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/identity"
)

// Identity in the policy: a grant, and an entry of required, may say who
// the plugins of its names must be (package identity: what the runtime
// observes of a plugin, never what the plugin says). A launched plugin
// (pre-installed, WASM, builtin) is who its file in the runtime's plugin
// directory says and meets every identity section; an external plugin
// meets `identity: any`, or a section whose every key its identity
// meets, and no grant or entry without an identity. A name the policy
// names is bound: an external plugin that registers under it and meets
// none of the identities of the grants (or none of the required entries)
// that name it is refused, so that it cannot take the name from the
// plugin the policy means (docs/policy.md, Identity).

// IdentitySpec is who the plugins of a grant or of a required entry must
// be: `identity: any` (Any: every plugin, any process that can reach the
// runtime's socket included), or the keys below, all of which must hold.
// With none of namespaces, podLabelSelector and containerNames the
// plugin's process must run in no container; with any of them, in a
// container of a pod the runtime lists, which meets them.
type IdentitySpec struct {
	// Any is `identity: any`.
	Any bool `yaml:"-"`
	// Namespaces are globs over the namespace of the process's pod.
	Namespaces []string `yaml:"namespaces"`
	// PodLabelSelector is a Kubernetes label selector over the pod's
	// labels.
	PodLabelSelector string `yaml:"podLabelSelector"`
	// ContainerNames are globs over the name of the process's container.
	ContainerNames []string `yaml:"containerNames"`
	// UIDs are the user IDs the process may have.
	UIDs []uint32 `yaml:"uids"`
	// Executables are the SHA-256 digests ("sha256:" and 64 hexadecimal
	// digits) the process's executable may have.
	Executables []string `yaml:"executables"`
}

// identityKeys are the keys of an identity mapping, for strict decoding.
var identityKeys = []string{"namespaces", "podLabelSelector", "containerNames", "uids", "executables"}

// UnmarshalYAML decodes `any` or a mapping of identityKeys, strictly.
func (s *IdentitySpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && n.Value == "any" {
			*s = IdentitySpec{Any: true}
			return nil
		}
	case yaml.MappingNode:
		var errs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(identityKeys, k.Value) {
				errs = append(errs, fmt.Sprintf("line %d: field %s not found in type policy.identity", k.Line, k.Value))
			}
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		type plain IdentitySpec
		return n.Decode((*plain)(s))
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: identity %q: want any, or a mapping of %s",
		n.Line, n.Value, strings.Join(identityKeys, ", "))}}
}

// RequirementSpec is an entry of required: a plugin (NAME or IDX-NAME)
// that must be registered, written as its name alone (it counts if it is
// a launched plugin) or as a mapping with the identity it must have.
type RequirementSpec struct {
	// Plugin is NAME or IDX-NAME.
	Plugin string `yaml:"plugin"`
	// Identity is who the plugin must be; nil: a launched plugin.
	Identity *IdentitySpec `yaml:"identity"`
}

// UnmarshalYAML decodes a name, or a mapping of plugin and identity.
func (r *RequirementSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*r = RequirementSpec{Plugin: n.Value}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a required plugin: want its name, or a mapping of plugin and identity", n.Line)}}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value != "plugin" && k.Value != "identity" {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type policy.required", k.Line, k.Value)}}
		}
	}
	type plain RequirementSpec
	return n.Decode((*plain)(r))
}

// identityMode is what kind of identity a grant or requirement takes.
type identityMode uint8

const (
	// launchedOnly: no identity section; only launched plugins meet it.
	launchedOnly identityMode = iota
	// anyone: `identity: any`.
	anyone
	// selected: an identity section.
	selected
)

// identityRule is a compiled identity section.
type identityRule struct {
	mode identityMode
	// where: the pod and container the process must run in; nil: none.
	where   *filter.Filter
	uids    []uint32
	digests []string
	// label is where the rule is: "policy.yaml:9: grants[0]".
	label string
}

// digestPattern is an executable digest as identity writes it.
var digestPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })

// identityRule compiles spec (nil: launched plugins only) at path; label
// names the grant or entry in messages.
func (c *compiler) identityRule(path []any, label string, spec *IdentitySpec) identityRule {
	r := identityRule{label: label}
	switch {
	case spec == nil:
		return r
	case spec.Any:
		r.mode = anyone
		return r
	}
	r.mode = selected
	if len(spec.Namespaces) == 0 && spec.PodLabelSelector == "" && len(spec.ContainerNames) == 0 &&
		len(spec.UIDs) == 0 && len(spec.Executables) == 0 {
		c.errorf(path, "an empty identity: name what the plugin must be (%s), or write identity: any", strings.Join(identityKeys, ", "))
	}
	if len(spec.Namespaces) > 0 || spec.PodLabelSelector != "" || len(spec.ContainerNames) > 0 {
		f, err := filter.Compile(&api.PluginScope{Namespaces: spec.Namespaces, PodLabelSelector: spec.PodLabelSelector, ContainerNames: spec.ContainerNames})
		if err != nil {
			c.errorf(path, "%v", strings.TrimPrefix(err.Error(), "filter: "))
		}
		r.where = f
	}
	r.uids = spec.UIDs
	for i, d := range spec.Executables {
		if !digestPattern().MatchString(d) {
			c.errorf(at(path, "executables", i), "executable digest %q: want sha256: and 64 lower-case hexadecimal digits (the digest= of the plugin's identity in the runtime's log)", d)
		}
	}
	r.digests = spec.Executables
	return r
}

// met reports whether id meets the rule.
func (r *identityRule) met(id *identity.Identity) bool {
	if id != nil && id.Kind.Launched() {
		return true
	}
	switch r.mode {
	case launchedOnly:
		return false
	case anyone:
		return true
	}
	if id == nil || id.Kind != identity.External || id.Process == nil || id.Unlocated != "" {
		return false
	}
	p := id.Process
	if r.uids != nil && !slices.Contains(r.uids, uint32(p.UID)) {
		return false
	}
	if r.digests != nil && (p.Digest == "" || !slices.Contains(r.digests, p.Digest)) {
		return false
	}
	c := id.Container
	if r.where == nil {
		return c == nil
	}
	if c == nil {
		return false
	}
	pod := &api.PodSandbox{Id: c.Pod.ID, Uid: c.Pod.UID, Namespace: c.Pod.Namespace, Name: c.Pod.Name, Labels: c.Pod.Labels}
	return r.where.MatchContainer(pod, &api.Container{Id: c.ID, PodSandboxId: c.Pod.ID, Name: c.Name})
}

// String renders the rule for summaries and messages: "launched",
// "any", or its criteria joined with AND.
func (r *identityRule) String() string {
	switch r.mode {
	case launchedOnly:
		return "launched"
	case anyone:
		return "any"
	}
	var parts []string
	if r.where != nil {
		parts = append(parts, r.where.String())
	} else {
		parts = append(parts, "in_no_container")
	}
	if r.uids != nil {
		u := make([]string, len(r.uids))
		for i, v := range r.uids {
			u[i] = strconv.FormatUint(uint64(v), 10)
		}
		parts = append(parts, "uids=["+strings.Join(u, ",")+"]")
	}
	if r.digests != nil {
		parts = append(parts, "executables=["+strings.Join(r.digests, ",")+"]")
	}
	return strings.Join(parts, " AND ")
}

// requires says what the rule requires, for a refusal: "policy.yaml:9:
// grants[0] takes launched plugins only (it has no identity)".
func (r *identityRule) requires() string {
	switch r.mode {
	case launchedOnly:
		return r.label + " takes launched plugins only (it has no identity)"
	case anyone:
		return r.label + " takes any plugin"
	}
	return r.label + " takes identity " + r.String()
}

// requirement is a compiled entry of required.
type requirement struct {
	name     string // NAME or IDX-NAME
	identity identityRule
}

// names reports whether the entry names the plugin idx-name (full).
func (r *requirement) names(name, full string) bool { return r.name == name || r.name == full }

// IdentityError is the refusal of an external plugin that registers
// under a name the policy binds to identities it does not have.
type IdentityError struct {
	// Plugin is the plugin's IDX-NAME.
	Plugin string
	// Identity is the plugin's.
	Identity *identity.Identity
	// Requires says what the policy requires of the name, by grant and
	// required entry ("policy.yaml:9: grants[0] takes identity
	// namespaces=[\"kube-system\"] ...").
	Requires []string
}

// Error says which plugin, what the policy requires of its name and who
// the plugin is.
func (e *IdentityError) Error() string {
	return fmt.Sprintf("plugin %q: the policy binds this name to another identity: %s; this plugin is %s",
		e.Plugin, strings.Join(e.Requires, "; "), e.Identity)
}

// GrantForIdentity returns the grant of the plugin idx-name whose
// identity is id: that of the first entry of grants with a pattern that
// matches it and an identity id meets; if no entry matches its name, the
// default grant if id meets the default's identity, else a grant of
// nothing. If entries of grants match its name but id meets none of
// their identities, or entries of required name it but id meets none of
// them, it returns an *IdentityError, with a grant of nothing (a runtime
// refuses a plugin registering so, and gives one already registered
// nothing). A launched plugin meets every identity section (see
// GrantFor). On the nil *Policy it returns nil, which allows everything.
func (p *Policy) GrantForIdentity(idx, name string, id *identity.Identity) (*Grant, error) {
	if p == nil {
		return nil, nil
	}
	full := api.FullPluginName(idx, name)
	g, grantsUnmet := firstMet(p.grants, id, func(g *Grant) (bool, *identityRule) { return g.matches(idx, name, full), &g.identity })
	_, requiredUnmet := firstMet(p.requirements, id, func(r requirement) (bool, *identityRule) { return r.names(name, full), &r.identity })
	if unmet := append(grantsUnmet, requiredUnmet...); len(unmet) > 0 {
		return p.none, &IdentityError{Plugin: full, Identity: id, Requires: unmet}
	}
	switch {
	case g >= 0:
		return p.grants[g], nil
	case p.def.identity.met(id):
		return p.def, nil
	}
	return p.none, nil
}

// firstMet returns the index of the first of items that names the plugin
// and has an identity id meets, or -1; if items name the plugin but id
// meets none of their identities, what each of them requires. rule says
// whether an item names the plugin, and gives its identity.
func firstMet[T any](items []T, id *identity.Identity, rule func(T) (bool, *identityRule)) (int, []string) {
	var unmet []string
	for i, it := range items {
		names, r := rule(it)
		if !names {
			continue
		}
		if r.met(id) {
			return i, nil
		}
		unmet = append(unmet, r.requires())
	}
	return -1, unmet
}

// matches reports whether a pattern of g matches the plugin idx-name
// (full).
func (g *Grant) matches(idx, name, full string) bool {
	for i := range g.patterns {
		if g.patterns[i].match(idx, name, full) {
			return true
		}
	}
	return false
}

// Identity returns the identity section of the grant, as Summary shows
// it: "launched" (none: launched plugins only), "any", or its criteria.
func (g *Grant) Identity() string {
	if g == nil {
		return "any"
	}
	return g.identity.String()
}

// required compiles the entries of required.
func (c *compiler) required(p *Policy, specs []RequirementSpec) {
	for i, r := range specs {
		path := []any{"required", i}
		if err := checkPluginRef(r.Plugin); err != nil {
			c.errorf(path, "%v", err)
		}
		label := fmt.Sprintf("%s:%d: required[%d] %s", c.file, c.line(path), i, r.Plugin)
		p.required = append(p.required, r.Plugin)
		p.requirements = append(p.requirements, requirement{name: r.Plugin, identity: c.identityRule(at(path, "identity"), label, r.Identity)})
	}
}

// identityWarnings returns the warnings of Warnings: every grant and
// required entry that takes any process that can reach the runtime's
// socket (identity: any).
func (c *compiler) identityWarnings(doc *Document) []*Error {
	var out []*Error
	warn := func(path []any, format string, args ...any) {
		out = append(out, &Error{File: c.file, Line: c.line(path), Msg: pathString(path) + ": " + fmt.Sprintf(format, args...)})
	}
	for i, g := range doc.Grants {
		if g.Identity != nil && g.Identity.Any {
			warn([]any{"grants", i, "identity"}, "any process that can reach the runtime's socket may register as %s and get this grant (and keep the plugin you mean out): bind it to the plugin's identity (docs/policy.md, Identity)",
				strings.Join(g.Plugins, ", "))
		}
	}
	if d := doc.Default; d != nil && d.Identity != nil && d.Identity.Any {
		warn([]any{"default", "identity"}, "any process that can reach the runtime's socket gets the default grant under a name no grant names")
	}
	for i, r := range doc.Required {
		if r.Identity != nil && r.Identity.Any {
			warn([]any{"required", i, "identity"}, "any process that can reach the runtime's socket may register as %s and count as the required plugin: bind it to the plugin's identity (docs/policy.md, Identity)", r.Plugin)
		}
	}
	return out
}

// Warnings returns what is valid in the policy but weak, each with its
// file and line: grants and required entries that take any process that
// can reach the runtime's socket (identity: any). `nri check policy`
// prints them; a runtime logs them when it loads the policy.
func (p *Policy) Warnings() []*Error {
	if p == nil {
		return nil
	}
	return slices.Clone(p.warnings)
}

// RequiredSummary describes each entry of required for `nri check
// policy`: its plugin and the identity it takes, as Grant.Identity
// renders it ("gpu-policy identity=launched").
func (p *Policy) RequiredSummary() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.requirements))
	for i := range p.requirements {
		r := &p.requirements[i]
		out[i] = r.name + " identity=" + r.identity.String()
	}
	return out
}
