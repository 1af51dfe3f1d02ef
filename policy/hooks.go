package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
)

// The rules of adjust.hooks. A hook runs an executable on the host, as
// the runtime's user, with the arguments and environment the plugin
// gives: what an executable does depends on them (a subcommand, a
// configuration file to rewrite, LD_PRELOAD), so a grant names them too.
// By default a hook may carry no argument but its name (argv[0], the
// hook's path or the base of it: a multi-call binary picks what it runs
// from it) and no environment.

// hookRule is a compiled HookSpec.
type hookRule struct {
	path     filter.Glob
	args     []filter.Glob // none: no argument but the hook's name, unless moreArgs
	moreArgs bool
	env      globList // empty: no environment
}

// hooks compiles adjust.hooks.
func (c *compiler) hooks(path []any, specs []HookSpec) []hookRule {
	rules := make([]hookRule, 0, len(specs))
	for i := range specs {
		s, where := &specs[i], at(path, i)
		if !strings.HasPrefix(s.Path, "/") {
			c.errorf(where, "path %q is not an absolute path glob", s.Path)
			continue
		}
		g, err := filter.CompileGlob(s.Path)
		if err != nil {
			c.errorf(where, "path: %v", err)
			continue
		}
		rules = append(rules, hookRule{path: g, moreArgs: s.MoreArgs,
			args: c.globs(at(where, "args"), s.Args), env: c.globs(at(where, "env"), s.Env)})
	}
	return rules
}

// checkHooks checks every hook of every stage.
func (g *Grant) checkHooks(vs []Violation, h *api.Hooks) []Violation {
	for _, stage := range [][]*api.Hook{h.GetPrestart(), h.GetCreateRuntime(), h.GetCreateContainer(),
		h.GetStartContainer(), h.GetPoststart(), h.GetPoststop()} {
		for _, hook := range stage {
			if reason := g.checkHook(hook); reason != "" {
				vs = g.deny(vs, capability.Hooks, hookValue(hook), reason)
			}
		}
	}
	return vs
}

// checkHook returns why a hook is refused, or "": the reason of the
// first rule for its path, if one is.
func (g *Grant) checkHook(h *api.Hook) string {
	p := h.GetPath()
	switch {
	case !g.caps.Has(capability.Hooks):
		return notGranted
	case !absClean(p):
		return "hook path is not an absolute clean path"
	}
	reason := ""
	for i := range g.adjust.hooks {
		r := &g.adjust.hooks[i]
		if !r.path.Match(p) {
			continue
		}
		why := r.allows(h)
		if why == "" {
			return ""
		}
		if reason == "" {
			reason = why
		}
	}
	if reason == "" {
		return "hook path not allowed"
	}
	return reason
}

// allows returns why the rule, which matches h's path, does not allow
// h's arguments or environment, or "".
func (r *hookRule) allows(h *api.Hook) string {
	args := h.GetArgs()
	if len(r.args) == 0 && !r.moreArgs {
		if len(args) > 1 || (len(args) == 1 && args[0] != h.GetPath() && args[0] != path.Base(h.GetPath())) {
			return fmt.Sprintf("argument %s not allowed: the grant allows the hook no argument but its name (no args in the rule)", quote(args[len(args)-1]))
		}
	} else {
		for i, a := range args {
			if i == len(r.args) {
				if r.moreArgs {
					break
				}
				return fmt.Sprintf("argument %d %s not allowed: the rule has %d (and no moreArgs)", i, quote(a), len(r.args))
			}
			if !r.args[i].Match(a) {
				return fmt.Sprintf("argument %d %s not allowed", i, quote(a))
			}
		}
		if len(args) < len(r.args) {
			return fmt.Sprintf("argument %d missing: the rule has %d", len(args), len(r.args))
		}
	}
	for _, e := range h.GetEnv() {
		if !r.env.match(e) {
			name, _, _ := strings.Cut(e, "=")
			return fmt.Sprintf("environment variable %s not allowed", quote(name))
		}
	}
	return ""
}

// hookValue renders a hook for a violation: its path and arguments, and
// the names of its environment variables (not their values).
func hookValue(h *api.Hook) string {
	var b strings.Builder
	b.WriteString(h.GetPath())
	for _, a := range h.GetArgs() {
		b.WriteString(" " + a)
	}
	for i, e := range h.GetEnv() {
		if i == 0 {
			b.WriteString(" env")
		}
		name, _, _ := strings.Cut(e, "=")
		b.WriteString(" " + name)
	}
	return quote(b.String())
}
