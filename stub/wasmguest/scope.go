package wasmguest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// WithScope limits the pods and containers the plugin's handlers see, as
// the stub's WithScope does, with the same semantics: the scope is sent
// to the runtime with the Configure response, and on a runtime that does
// not evaluate scopes (one that does not advertise its events, such as
// upstream's) the guest enforces it itself before each handler. An event
// out of scope is answered without calling the handler and without
// changes (opting out of the pod or container, for RunPodSandbox and
// CreateContainer), and Synchronize hands the handler only the pods and
// containers in scope. For a scope on container annotations, whose view
// of a container may change after its creation, the guest also subscribes
// to CreateContainer and RemoveContainer, to remember the containers in
// scope at their creation. The guest evaluates scopes without CEL: on
// such a runtime a scope with a CEL expression fails Configure.
func WithScope(scope *api.PluginScope) Option {
	return func(c *config) error {
		if scope == nil {
			return errors.New("wasmguest: WithScope: nil scope")
		}
		c.core.Scope, c.compile = scope, compileScope
		return nil
	}
}

// compileScope compiles a scope without CEL. Only WithScope refers to it,
// and only it to package filter, so that a module whose plugin has no
// scope does not link the filter and the regular expressions behind it
// (about 0.6 MB of a Go guest).
func compileScope(scope *api.PluginScope) (pcore.Matcher, error) {
	if strings.TrimSpace(scope.GetCel()) != "" {
		return nil, errors.New("wasmguest: WithScope: the guest cannot evaluate CEL expressions")
	}
	f, err := filter.Compile(scope)
	if err != nil {
		return nil, fmt.Errorf("wasmguest: WithScope: %w", err)
	}
	return f, nil
}
