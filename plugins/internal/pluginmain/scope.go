package pluginmain

import (
	"flag"

	"github.com/nrikit/nrikit/api"
)

// scopeFlags are the flags that set the plugin's event scope (a nrikit
// extension: the runtime then sends only events about matching pods and
// containers).
type scopeFlags struct {
	def         *api.PluginScope
	set         bool
	podSelector string
	namespaces  multi
	handlers    multi
	containers  multi
	images      multi
	cel         string
	all         bool
}

func (s *scopeFlags) register(fs *flag.FlagSet, def *api.PluginScope) {
	s.def = def
	mark := func(f func(string) error) func(string) error {
		return func(v string) error { s.set = true; return f(v) }
	}
	str := func(dst *string) func(string) error { return func(v string) error { *dst = v; return nil } }
	fs.Func("pod-selector", "scope: Kubernetes label selector over pod labels, such as accel=gpu", mark(str(&s.podSelector)))
	fs.Func("namespace", "scope: pod namespace glob (repeatable)", mark(s.namespaces.Set))
	fs.Func("runtime-handler", "scope: runtime handler (repeatable)", mark(s.handlers.Set))
	fs.Func("container", "scope: container name glob (repeatable)", mark(s.containers.Set))
	fs.Func("image", "scope: image glob (repeatable)", mark(s.images.Set))
	fs.Func("cel", "scope: CEL expression over pod and container (evaluated by nrikit's runtime; on others the plugin needs CEL support)", mark(str(&s.cel)))
	fs.BoolFunc("all", "scope: all pods and containers, replacing the plugin's default scope", func(string) error {
		s.set, s.all = true, true
		return nil
	})
}

// scope returns the scope to send: the default unless a scope flag was
// given, nil for all pods and containers.
func (s *scopeFlags) scope() *api.PluginScope {
	if !s.set {
		return s.def
	}
	if s.all {
		return nil
	}
	return &api.PluginScope{
		PodLabelSelector: s.podSelector,
		Namespaces:       s.namespaces,
		RuntimeHandlers:  s.handlers,
		ContainerNames:   s.containers,
		Images:           s.images,
		Cel:              s.cel,
	}
}
