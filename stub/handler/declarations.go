package handler

import (
	"errors"
	"fmt"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// Declarations is what a plugin declares about itself, beside its
// handlers: what it subscribes to and requires, where it applies, how the
// runtime treats its failures, and the configuration it falls back to. It
// is sent to the runtime with the Configure response (the default
// configuration aside), and means the same to both front ends, so that a
// plugin built as a process and as a WASM module declares it once:
//
//	var declared = handler.Declarations{Scope: scope, RequiredEvents: required}
//
//	stub.New(p, stub.WithDeclarations(declared))             // the process
//	wasmguest.Register(p, wasmguest.WithDeclarations(declared)) // the module
//
// The zero value declares nothing: the plugin subscribes to every event
// it has a handler for, requires nothing, applies to every pod and
// container, and takes the runtime's failure policy and configuration.
// Each field is also an option of its own in either front end
// (stub.WithSubscription, wasmguest.WithSubscription, ...); a field left
// zero does not replace what such an option set.
type Declarations struct {
	// Subscription, if not zero, is the events to subscribe to instead
	// of every event the plugin has a handler for; it must be a subset of
	// them. A non-zero result of the Configure handler replaces it.
	Subscription api.EventMask
	// RequiredEvents are events the plugin cannot work without: its
	// registration (a process) or Configure (a module) fails, naming
	// them, if the runtime cannot deliver them. Other events the runtime
	// does not deliver are dropped from the subscription.
	RequiredEvents api.EventMask
	// RequiredCapabilities are the kinds of change the plugin cannot
	// work without: a nrikit runtime that does not honour them all for
	// the plugin refuses it, naming the missing ones (an upstream
	// runtime ignores them).
	RequiredCapabilities capability.Set
	// Scope, if not nil, limits the pods and containers the plugin's
	// handlers are called about (docs/scope.md): the runtime evaluates
	// it, or, on a runtime that does not, the front end does.
	Scope *api.PluginScope
	// FailurePolicy, if not nil, is how the runtime treats a failure of
	// the plugin to handle a request (fail the request, keep the plugin
	// connected after a timeout); runtimes without failure policies
	// ignore it.
	FailurePolicy *api.FailurePolicy
	// DefaultConfig, if not empty, is handed to the Configure handler
	// when the runtime sends no configuration.
	DefaultConfig string
	// ObserveOnly declares that the plugin only observes
	// (docs/protocol.md §5.5): a nrikit runtime never waits for its
	// answers and uses none of them; an upstream runtime ignores the
	// declaration and calls the plugin in its turn.
	ObserveOnly bool
}

// Check reports what makes d invalid for any plugin: event bits that name
// no event. Whether the events are among those the plugin handles is
// checked by the front end, which knows the plugin.
func (d Declarations) Check() error {
	var errs []error
	if u := d.Subscription.Unknown(); u != 0 {
		errs = append(errs, fmt.Errorf("subscription: unknown event bits 0x%x", uint32(u)))
	}
	if u := d.RequiredEvents.Unknown(); u != 0 {
		errs = append(errs, fmt.Errorf("required events: unknown event bits 0x%x", uint32(u)))
	}
	return errors.Join(errs...)
}
