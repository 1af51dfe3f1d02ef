package filter

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/nrikit/nrikit/api"
)

// ErrNoCEL is the error (wrapped) of compiling a scope with a CEL
// expression without CEL support: see [WithCEL].
var ErrNoCEL = errors.New("no CEL support compiled in")

// Matcher is a compiled scope criterion, or a whole scope (a *Filter is
// one). A Matcher must be safe for concurrent use.
type Matcher interface {
	// MatchPod reports whether a pod event about pod is in scope.
	MatchPod(pod *api.PodSandbox) bool
	// MatchContainer reports whether an event about ctr, a container of
	// pod, is in scope.
	MatchContainer(pod *api.PodSandbox, ctr *api.Container) bool
}

// CELCompiler compiles the CEL expression of a scope into a Matcher with
// the semantics of the package documentation (section CEL), applying
// cfg. Package github.com/nrikit/nrikit/filter/celscope provides nrikit's
// (celscope.Compile); see [WithCEL].
type CELCompiler func(expr string, cfg CELConfig) (Matcher, error)

// CELConfig is what the options of [Compile] say about evaluating a CEL
// expression.
type CELConfig struct {
	// CostLimit bounds the estimated and the actual cost of an
	// evaluation (see [DefaultCELCostLimit] and [WithCELCostLimit]).
	CostLimit uint64
	// Logger, if not nil, is told of evaluation errors at level Warn
	// (see [WithLogger]).
	Logger *slog.Logger
	// OnEvalError, if not nil, is called with each evaluation error
	// (see [WithEvalErrorHandler]).
	OnEvalError func(*EvalError)
}

// WithCEL makes Compile accept scopes with a CEL expression, compiled by
// compile (celscope.Compile). Without it, such a scope is an error
// wrapping [ErrNoCEL]: CEL lives in a package of its own so that programs
// that evaluate no CEL expression, such as most plugins, do not link a
// CEL implementation.
func WithCEL(compile CELCompiler) Option {
	return func(c *config) error {
		if compile == nil {
			return fmt.Errorf("nil CEL compiler")
		}
		c.cel = compile
		return nil
	}
}

// celCriterion holds if the scope's CEL expression evaluates to true.
type celCriterion struct {
	expr string
	m    Matcher
}

// compileCEL compiles expr with the configured CEL compiler.
func compileCEL(expr string, cfg *config) (celCriterion, error) {
	if cfg.cel == nil {
		return celCriterion{}, fmt.Errorf("expression %q: %w (the program must compile scopes with filter.WithCEL(celscope.Compile))", expr, ErrNoCEL)
	}
	m, err := cfg.cel(expr, CELConfig{CostLimit: cfg.celCostLimit, Logger: cfg.logger, OnEvalError: cfg.onEvalError})
	if err != nil {
		return celCriterion{}, err
	}
	if m == nil {
		return celCriterion{}, fmt.Errorf("expression %q: the CEL compiler returned no matcher", expr)
	}
	return celCriterion{expr: expr, m: m}, nil
}

func (c celCriterion) matchPod(pod *api.PodSandbox) bool { return c.m.MatchPod(pod) }

func (c celCriterion) matchContainer(pod *api.PodSandbox, ctr *api.Container) bool {
	return c.m.MatchContainer(pod, ctr)
}

func (c celCriterion) String() string { return "cel=" + strconv.Quote(c.expr) }
