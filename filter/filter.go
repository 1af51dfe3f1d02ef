package filter

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/nrikit/nrikit/api"
)

// DefaultCELCostLimit is the cost limit of a CEL expression unless
// WithCELCostLimit says otherwise. It bounds both the estimated worst-case
// cost checked at compile time and the actual cost of each evaluation. It
// is the per-expression limit Kubernetes uses for its CEL admission rules.
const DefaultCELCostLimit uint64 = 1_000_000

// Filter is a compiled scope: a conjunction of criteria over pods and
// containers. A Filter is immutable and safe for concurrent use. The nil
// *Filter and the zero Filter match everything.
type Filter struct {
	criteria []criterion
}

// criterion is one compiled, set criterion of a scope.
type criterion interface {
	// matchPod reports whether a pod event about pod is in scope.
	matchPod(pod *api.PodSandbox) bool
	// matchContainer reports whether an event about ctr, a container of
	// pod, is in scope.
	matchContainer(pod *api.PodSandbox, ctr *api.Container) bool
	// String renders the criterion in the form key=value.
	String() string
}

// Option configures Compile.
type Option func(*config) error

// config is the result of applying Options.
type config struct {
	logger       *slog.Logger
	onEvalError  func(*EvalError)
	celCostLimit uint64
	cel          CELCompiler // see WithCEL
}

// WithLogger makes the filter log evaluation errors of its CEL expression
// (at level Warn) to logger. Without it such errors are not logged.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return fmt.Errorf("nil logger")
		}
		c.logger = logger
		return nil
	}
}

// WithEvalErrorHandler makes the filter call fn with each evaluation error
// of its CEL expression. An expression whose evaluation fails does not
// match. fn is called synchronously from MatchPod and MatchContainer, maybe
// concurrently, and must not block.
func WithEvalErrorHandler(fn func(*EvalError)) Option {
	return func(c *config) error {
		if fn == nil {
			return fmt.Errorf("nil evaluation error handler")
		}
		c.onEvalError = fn
		return nil
	}
}

// WithCELCostLimit sets the cost limit of the CEL expression (see
// DefaultCELCostLimit). It must be positive.
func WithCELCostLimit(limit uint64) Option {
	return func(c *config) error {
		if limit == 0 {
			return fmt.Errorf("zero CEL cost limit")
		}
		c.celCostLimit = limit
		return nil
	}
}

// EvalError is a failed evaluation of a scope's CEL expression.
type EvalError struct {
	// Expression is the CEL expression.
	Expression string
	// PodID is the ID of the pod the expression was evaluated for.
	PodID string
	// ContainerID is the ID of the container the expression was
	// evaluated for, empty for a pod event.
	ContainerID string
	// Err is CEL's error.
	Err error
}

// Error implements error.
func (e *EvalError) Error() string {
	target := "pod " + e.PodID
	if e.ContainerID != "" {
		target = "container " + e.ContainerID + " of " + target
	}
	return fmt.Sprintf("evaluating scope expression %q for %s: %v", e.Expression, target, e.Err)
}

// Unwrap returns the underlying CEL error.
func (e *EvalError) Unwrap() error { return e.Err }

// Compile validates and compiles scope. A nil or empty scope yields a Filter
// that matches everything. The error names the offending criterion and,
// for a label selector or CEL expression, the position of the problem; the
// runtime rejects a plugin registration with it. A scope with a CEL
// expression needs [WithCEL].
func Compile(scope *api.PluginScope, opts ...Option) (*Filter, error) {
	cfg := config{celCostLimit: DefaultCELCostLimit}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("filter: invalid option: %w", err)
		}
	}
	f := &Filter{}
	if scope == nil {
		return f, nil
	}
	if len(scope.GetNamespaces()) > 0 {
		gs, err := compileGlobs(scope.GetNamespaces())
		if err != nil {
			return nil, fmt.Errorf("filter: namespaces: %w", err)
		}
		f.criteria = append(f.criteria, namespaceCriterion{gs})
	}
	if strings.TrimSpace(scope.GetPodLabelSelector()) != "" {
		sel, err := ParseSelector(scope.GetPodLabelSelector())
		if err != nil {
			return nil, fmt.Errorf("filter: pod_label_selector: %w", err)
		}
		f.criteria = append(f.criteria, labelCriterion{sel})
	}
	if len(scope.GetPodAnnotations()) > 0 {
		ms, err := compileAnnotations(scope.GetPodAnnotations())
		if err != nil {
			return nil, fmt.Errorf("filter: pod_annotations: %w", err)
		}
		f.criteria = append(f.criteria, podAnnotationCriterion{ms})
	}
	if len(scope.GetRuntimeHandlers()) > 0 {
		f.criteria = append(f.criteria, handlerCriterion{append([]string(nil), scope.GetRuntimeHandlers()...)})
	}
	if len(scope.GetContainerAnnotations()) > 0 {
		ms, err := compileAnnotations(scope.GetContainerAnnotations())
		if err != nil {
			return nil, fmt.Errorf("filter: container_annotations: %w", err)
		}
		f.criteria = append(f.criteria, ctrAnnotationCriterion{ms})
	}
	if len(scope.GetContainerNames()) > 0 {
		gs, err := compileGlobs(scope.GetContainerNames())
		if err != nil {
			return nil, fmt.Errorf("filter: container_names: %w", err)
		}
		f.criteria = append(f.criteria, nameCriterion{gs})
	}
	if len(scope.GetImages()) > 0 {
		gs, err := compileGlobs(scope.GetImages())
		if err != nil {
			return nil, fmt.Errorf("filter: images: %w", err)
		}
		f.criteria = append(f.criteria, imageCriterion{gs})
	}
	if strings.TrimSpace(scope.GetCel()) != "" {
		c, err := compileCEL(scope.GetCel(), &cfg)
		if err != nil {
			return nil, fmt.Errorf("filter: cel: %w", err)
		}
		f.criteria = append(f.criteria, c)
	}
	return f, nil
}

// MatchPod reports whether an event about pod is in scope: whether all
// pod-level criteria hold for it and the CEL expression, if any, can hold
// for some container of it. Container-level criteria do not restrict pod
// events. A nil pod is treated as an empty one.
func (f *Filter) MatchPod(pod *api.PodSandbox) bool {
	if f == nil {
		return true
	}
	for _, c := range f.criteria {
		if !c.matchPod(pod) {
			return false
		}
	}
	return true
}

// MatchContainer reports whether an event about ctr, a container of pod, is
// in scope: whether all criteria hold, pod-level ones for pod. A nil pod or
// container is treated as an empty one.
func (f *Filter) MatchContainer(pod *api.PodSandbox, ctr *api.Container) bool {
	if f == nil {
		return true
	}
	for _, c := range f.criteria {
		if !c.matchContainer(pod, ctr) {
			return false
		}
	}
	return true
}

// MatchesAll reports whether f has no criteria, so that it matches every
// pod and container.
func (f *Filter) MatchesAll() bool {
	return f == nil || len(f.criteria) == 0
}

// String renders the effective scope for logs: "all", or the criteria in
// the form key=value joined by " AND ", e.g.
//
//	namespaces=["kube-*"] AND pod_label_selector="gpu=true"
func (f *Filter) String() string {
	if f.MatchesAll() {
		return "all"
	}
	parts := make([]string, len(f.criteria))
	for i, c := range f.criteria {
		parts[i] = c.String()
	}
	return strings.Join(parts, " AND ")
}

// And returns the conjunction of filters: a Filter that matches what all of
// them match, e.g. a plugin's own scope and the one its administrator
// configured. Nil filters match everything; And() matches everything.
func And(filters ...*Filter) *Filter {
	out := &Filter{}
	for _, f := range filters {
		if f != nil {
			out.criteria = append(out.criteria, f.criteria...)
		}
	}
	return out
}
