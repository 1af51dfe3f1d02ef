package stub

import (
	"fmt"

	"github.com/nrikit/nrikit/filter"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// A plugin's scope (WithScope) is sent to the runtime, and nrikit's
// runtime then sends only the events about pods and containers in it
// (docs/scope.md). On a runtime that does not evaluate scopes the stub's
// core enforces it (stub/internal/core, scope.go), with the filter
// compiled here.

// WithCEL lets the stub evaluate a scope's CEL expression itself, on
// runtimes that do not evaluate scopes (see [WithScope]); pass
// celscope.Compile (package github.com/nrikit/nrikit/filter/celscope).
// CEL is an option because its implementation adds several megabytes to
// a plugin binary: a plugin whose scope has no CEL expression does not
// need it, and one whose scope has one and runs only on nrikit's runtime,
// which evaluates the expression, does not either.
func WithCEL(compile filter.CELCompiler) Option {
	return func(c *config) error {
		if compile == nil {
			return fmt.Errorf("stub: WithCEL: nil compiler")
		}
		c.cel = compile
		return nil
	}
}

// planScope compiles the scope of cfg, if any, for the core's gate: the
// matcher, or why the scope does not compile (the core reports it when it
// has to enforce the scope, a runtime that evaluates scopes when it
// receives the scope).
func planScope(cfg *config) (pcore.Matcher, error) {
	if cfg.scope == nil {
		return nil, nil
	}
	opts := []filter.Option{filter.WithLogger(cfg.logger)}
	if cfg.cel != nil {
		opts = append(opts, filter.WithCEL(cfg.cel))
	}
	f, err := filter.Compile(cfg.scope, opts...)
	if err != nil {
		return nil, fmt.Errorf("stub: WithScope: %w", err)
	}
	return f, nil
}
