package celscope

import (
	"errors"
	"fmt"
	"log/slog"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
)

// celCriterion holds if the scope's CEL expression evaluates to true.
// It implements filter.Matcher.
type celCriterion struct {
	expr string
	// prg evaluates container events.
	prg cel.Program
	// podPrg evaluates pod events, with container unknown.
	podPrg cel.Program
	// unknownCtr marks container as unknown for podPrg.
	unknownCtr []*interpreter.AttributePattern
	logger     *slog.Logger
	onError    func(*filter.EvalError)
}

// newCELEnv returns the environment expressions are checked in: the
// standard CEL library with optional values (m[?k].orValue(d)) and the
// variables pod and container.
func newCELEnv() (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return cel.NewEnv(
		cel.CustomTypeProvider(celProvider{reg}),
		cel.OptionalTypes(),
		cel.Variable("pod", cel.ObjectType(celPodType)),
		cel.Variable("container", cel.ObjectType(celContainerType)),
	)
}

var _ filter.CELCompiler = Compile

// Compile parses, checks and plans expr, a scope's CEL expression, under
// cfg's cost limit; the result reports evaluation errors to cfg's
// handler and logger. Compile is a [filter.CELCompiler]: pass it to
// [filter.WithCEL].
func Compile(expr string, cfg filter.CELConfig) (filter.Matcher, error) {
	if cfg.CostLimit == 0 {
		cfg.CostLimit = filter.DefaultCELCostLimit
	}
	env, err := newCELEnv()
	if err != nil {
		return nil, fmt.Errorf("creating CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, err
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, fmt.Errorf("expression %q has type %s, must be bool", expr, t)
	}
	if err := checkNoConstruction(ast); err != nil {
		return nil, err
	}
	est, err := env.EstimateCost(ast, celSizeEstimator{})
	if err != nil {
		return nil, fmt.Errorf("estimating cost of %q: %w", expr, err)
	}
	if est.Max > cfg.CostLimit {
		return nil, fmt.Errorf("expression %q: estimated worst-case cost %d exceeds the limit %d", expr, est.Max, cfg.CostLimit)
	}
	c := &celCriterion{
		expr:       expr,
		unknownCtr: []*interpreter.AttributePattern{cel.AttributePattern("container")},
		logger:     cfg.Logger,
		onError:    cfg.OnEvalError,
	}
	if c.prg, err = env.Program(ast, cel.CostLimit(cfg.CostLimit), cel.EvalOptions(cel.OptOptimize)); err != nil {
		return nil, fmt.Errorf("planning %q: %w", expr, err)
	}
	if c.podPrg, err = env.Program(ast, cel.CostLimit(cfg.CostLimit), cel.EvalOptions(cel.OptOptimize, cel.OptPartialEval)); err != nil {
		return nil, fmt.Errorf("planning %q for pod events: %w", expr, err)
	}
	return c, nil
}

// checkNoConstruction rejects expressions that construct pod or container
// values (nrikit.Pod{...}), which could only fail at evaluation.
func checkNoConstruction(a *cel.Ast) error {
	for _, e := range celast.MatchDescendants(celast.NavigateAST(a.NativeRep()), celast.KindMatcher(celast.StructKind)) {
		if name := e.AsStruct().TypeName(); name == celPodType || name == celContainerType {
			return fmt.Errorf("expression constructs a %s value; only the variables pod and container are available", name)
		}
	}
	return nil
}

// MatchPod evaluates the expression with container unknown: the pod event
// matches unless the expression is false (or fails) whatever the container.
func (c *celCriterion) MatchPod(pod *api.PodSandbox) bool {
	act := &partialActivation{activation: activation{pod: podVal{pod}}, unknowns: c.unknownCtr}
	out, _, err := c.podPrg.Eval(act)
	return c.result(out, err, pod, nil)
}

// MatchContainer evaluates the expression for a container event.
func (c *celCriterion) MatchContainer(pod *api.PodSandbox, ctr *api.Container) bool {
	act := &activation{pod: podVal{pod}, ctr: ctrVal{ctr}, hasCtr: true}
	out, _, err := c.prg.Eval(act)
	return c.result(out, err, pod, ctr)
}

// result turns an evaluation's outcome into a match, reporting errors.
func (c *celCriterion) result(out ref.Val, err error, pod *api.PodSandbox, ctr *api.Container) bool {
	if err == nil {
		switch v := out.(type) {
		case types.Bool:
			return bool(v)
		case *types.Unknown:
			return true
		}
		err = fmt.Errorf("unexpected result %v of type %v", out, out.Type())
	}
	if c.onError == nil && c.logger == nil {
		return false
	}
	e := &filter.EvalError{Expression: c.expr, PodID: pod.GetId(), ContainerID: ctr.GetId(), Err: err}
	if c.onError != nil {
		c.onError(e)
	}
	if c.logger != nil {
		c.logger.Warn("scope expression failed, treating as no match",
			"expression", c.expr, "pod", e.PodID, "container", e.ContainerID, "error", err,
			"costLimitExceeded", isCostLimitExceeded(err))
	}
	return false
}

// isCostLimitExceeded reports whether err is CEL's cancellation of an
// evaluation for exceeding the cost limit.
func isCostLimitExceeded(err error) bool {
	var ce interpreter.EvalCancelledError
	return errors.As(err, &ce) && ce.Cause == interpreter.CostLimitExceeded
}

// activation binds pod and, for container events, container.
type activation struct {
	pod    podVal
	ctr    ctrVal
	hasCtr bool
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "pod":
		return a.pod, true
	case "container":
		if a.hasCtr {
			return a.ctr, true
		}
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// partialActivation is an activation in which some attributes are unknown.
type partialActivation struct {
	activation
	unknowns []*interpreter.AttributePattern
}

// UnknownAttributePatterns implements interpreter.PartialActivation.
func (a *partialActivation) UnknownAttributePatterns() []*interpreter.AttributePattern {
	return a.unknowns
}

// AsPartialActivation lets the interpreter find the unknowns.
func (a *partialActivation) AsPartialActivation() (interpreter.PartialActivation, bool) {
	return a, true
}

// Size hints for the compile-time cost estimate. They bound typical, not
// all, objects; the limit on the actual cost of each evaluation holds
// whatever the object's size.
const (
	hintMapEntries  = 64   // labels, annotations, env
	hintListEntries = 256  // args
	hintName        = 253  // names, namespaces, IDs, handlers
	hintImage       = 1024 // image references
	hintLabelKey    = 317  // prefix/name
	hintLabelValue  = 63
	hintLongString  = 4096 // annotation values, env values, args
)

// celSizeEstimator supplies size hints for the variables' fields.
type celSizeEstimator struct{}

// EstimateSize implements cost.Estimator.
func (celSizeEstimator) EstimateSize(node cost.AstNode) *cost.SizeEstimate {
	path := node.Path()
	if len(path) == 0 || (path[0] != "pod" && path[0] != "container") {
		return nil
	}
	size := func(max uint64) *cost.SizeEstimate { return &cost.SizeEstimate{Min: 0, Max: max} }
	if len(path) == 1 { // the object itself, e.g. in pod == pod
		return &cost.SizeEstimate{Min: 1, Max: 1}
	}
	field, sub := path[1], ""
	if len(path) == 3 {
		sub = path[2]
	} else if len(path) > 3 {
		return nil
	}
	switch field {
	case "labels":
		switch sub {
		case "":
			return size(hintMapEntries)
		case "@keys":
			return size(hintLabelKey)
		case "@values":
			return size(hintLabelValue)
		}
	case "annotations", "env":
		switch sub {
		case "":
			return size(hintMapEntries)
		case "@keys":
			return size(hintLabelKey)
		case "@values":
			return size(hintLongString)
		}
	case "args":
		switch sub {
		case "":
			return size(hintListEntries)
		case "@items":
			return size(hintLongString)
		}
	case "image":
		return size(hintImage)
	default:
		if sub == "" {
			return size(hintName)
		}
	}
	return nil
}

// EstimateCallCost implements cost.Estimator; the standard costs apply.
func (celSizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
