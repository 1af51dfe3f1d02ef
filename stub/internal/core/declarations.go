package core

import (
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/handler"
)

// Declare is a front end's options for the fields of
// [handler.Declarations], so that the stub and the WASM guest turn
// declarations into their options the same way (With is the front end's
// option type).
type Declare[With any] struct {
	Subscription         func(api.EventMask) With
	RequiredEvents       func(api.EventMask) With
	RequiredCapabilities func(...capability.Capability) With
	Scope                func(*api.PluginScope) With
	FailurePolicy        func(*api.FailurePolicy) With
	DefaultConfig        func(string) With
	ObserveOnly          func() With
}

// Options returns the options of d's non-zero fields, in the order of
// the fields.
func (w Declare[With]) Options(d handler.Declarations) []With {
	var opts []With
	if d.Subscription != 0 {
		opts = append(opts, w.Subscription(d.Subscription))
	}
	if d.RequiredEvents != 0 {
		opts = append(opts, w.RequiredEvents(d.RequiredEvents))
	}
	if !d.RequiredCapabilities.Empty() {
		opts = append(opts, w.RequiredCapabilities(d.RequiredCapabilities.List()...))
	}
	if d.Scope != nil {
		opts = append(opts, w.Scope(d.Scope))
	}
	if d.FailurePolicy != nil {
		opts = append(opts, w.FailurePolicy(d.FailurePolicy))
	}
	if d.DefaultConfig != "" {
		opts = append(opts, w.DefaultConfig(d.DefaultConfig))
	}
	if d.ObserveOnly {
		opts = append(opts, w.ObserveOnly())
	}
	return opts
}

// Apply applies a front end's options to its configuration c, in order,
// and returns the first error.
func Apply[C any, O ~func(*C) error](c *C, opts []O) error {
	for _, o := range opts {
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}
