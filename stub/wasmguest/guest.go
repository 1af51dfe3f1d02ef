package wasmguest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/fastdecode"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// The opt-out sentinels: a RunPodSandbox or CreateContainer handler may
// return ErrNotInterestedInPod (also wrapped) to opt out of further events
// about the pod and its containers, a CreateContainer handler
// ErrNotInterestedInContainer for the container; the answer carries the
// opt-out (a nrikit runtime honours it, upstream's ignores it). Other
// handlers' sentinels are answered as success. They are the same errors as
// the stub's (stub.ErrNotInterestedInPod, ...), so that the handlers of a
// plugin built both as a process and as a WASM module can return these.
var (
	// ErrNotInterestedInPod opts out of events about a pod.
	ErrNotInterestedInPod = handlers.ErrNotInterestedInPod
	// ErrNotInterestedInContainer opts out of events about a container.
	ErrNotInterestedInContainer = handlers.ErrNotInterestedInContainer
)

// APIVersion is the version of the WASM ABI the guest implements, the
// value of its plugin_api_version export (upstream's
// PluginPluginAPIVersion).
const APIVersion = 1

// The names of the functions a plugin module exports, one per request.
const (
	FuncConfigure       = "plugin_configure"
	FuncSynchronize     = "plugin_synchronize"
	FuncShutdown        = "plugin_shutdown"
	FuncRunPod          = "plugin_run_pod_sandbox"
	FuncUpdatePod       = "plugin_update_pod_sandbox"
	FuncPostUpdatePod   = "plugin_post_update_pod_sandbox"
	FuncStopPod         = "plugin_stop_pod_sandbox"
	FuncRemovePod       = "plugin_remove_pod_sandbox"
	FuncCreateContainer = "plugin_create_container"
	FuncPostCreate      = "plugin_post_create_container"
	FuncStartContainer  = "plugin_start_container"
	FuncPostStart       = "plugin_post_start_container"
	FuncUpdateContainer = "plugin_update_container"
	FuncPostUpdate      = "plugin_post_update_container"
	FuncStopContainer   = "plugin_stop_container"
	FuncRemoveContainer = "plugin_remove_container"
	FuncStateChange     = "plugin_state_change"
	FuncValidate        = "plugin_validate_container_adjustment"
)

// Option configures a [Guest].
type Option func(*config) error

type config struct {
	subscription api.EventMask
	policy       *api.FailurePolicy
	scope        *api.PluginScope
	// newGate is set with scope (see gate).
	newGate func(*api.PluginScope, *api.ConfigureRequest) (*gate, error)
	log     func(level api.LogRequest_Level, msg string)
}

// WithSubscription subscribes to mask instead of every event the plugin
// has a handler for (the default); it must be a non-empty subset of them.
// A non-zero result of the plugin's Configure handler overrides it.
func WithSubscription(mask api.EventMask) Option {
	return func(c *config) error {
		if mask == 0 {
			return errors.New("wasmguest: WithSubscription: empty mask")
		}
		c.subscription = mask
		return nil
	}
}

// WithFailurePolicy sends policy with the Configure response (what the
// runtime does when the plugin fails; nil for the runtime's default).
func WithFailurePolicy(policy *api.FailurePolicy) Option {
	return func(c *config) error {
		c.policy = policy
		return nil
	}
}

// WithScope limits the pods and containers the plugin's handlers see, as
// the stub's WithScope does: the scope is sent to the runtime with the
// Configure response, and on a runtime that does not evaluate scopes
// (one that does not advertise its events, such as upstream's) the guest
// evaluates it itself before each handler. The guest evaluates scopes
// without CEL: on such a runtime a scope with a CEL expression fails
// Configure.
func WithScope(scope *api.PluginScope) Option {
	return func(c *config) error {
		if scope == nil {
			return errors.New("wasmguest: WithScope: nil scope")
		}
		c.scope, c.newGate = scope, newGate
		return nil
	}
}

// WithLog sends the guest's own diagnostics (handler panics, scope and
// subscription decisions) to log; by default they are dropped, and in a
// module they go to the host through env.log.
func WithLog(log func(level api.LogRequest_Level, msg string)) Option {
	return func(c *config) error {
		if log == nil {
			return errors.New("wasmguest: WithLog: nil function")
		}
		c.log = log
		return nil
	}
}

// Guest dispatches the requests of the WASM ABI to a plugin's handlers:
// it decodes a request, calls the handler (if the plugin has one; the
// others answer empty), and encodes the response. It is the
// platform-neutral core of the package; the module's exports feed it.
// A Guest serves one request at a time, as the host calls it.
type Guest struct {
	cfg         config
	h           handlers.Set
	implemented api.EventMask
	wanted      api.EventMask

	gate *gate     // scope gate of the current configuration, or nil
	sync syncParts // Synchronize parts collected so far
	out  []byte    // response buffer, reused
}

// New returns a Guest for plugin, which implements some of the stub's
// handler interfaces (stub.ConfigureInterface, stub.CreateContainerInterface,
// …; see package github.com/nrikit/nrikit/stub).
func New(plugin any, opts ...Option) (*Guest, error) {
	cfg := config{log: func(api.LogRequest_Level, string) {}}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("wasmguest: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	h, implemented, err := collectHandlers(plugin)
	if err != nil {
		return nil, err
	}
	if extra := cfg.subscription &^ implemented; extra != 0 {
		return nil, fmt.Errorf("wasmguest: WithSubscription: plugin %T has no handlers for %s", plugin, extra)
	}
	wanted := implemented
	if cfg.subscription != 0 {
		wanted = cfg.subscription
	}
	return &Guest{cfg: cfg, h: h, implemented: implemented, wanted: wanted}, nil
}

// Implemented returns the events the plugin has handlers for.
func (g *Guest) Implemented() api.EventMask { return g.implemented }

// Handle serves one request: fn is the name of the export called (such as
// [FuncCreateContainer]), req the protobuf encoding of its request. It
// returns the protobuf encoding of the response, valid until the next
// call, or the error to answer with. A handler panic is recovered into an
// error.
func (g *Guest) Handle(fn string, req []byte) ([]byte, error) {
	rsp, err := g.dispatch(context.Background(), fn, req)
	if err != nil {
		return nil, err
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(g.out[:0], rsp)
	if err != nil {
		return nil, fmt.Errorf("wasmguest: encoding the %s response: %w", fn, err)
	}
	g.out = out
	return out, nil
}

// decode unmarshals b into m with the hand-written decoders of the
// requests made of a pod and a container (as the stub does; protobuf-go's
// reflective decoder takes twice as long in a guest), trusting the host
// for UTF-8: the requests come from the runtime's encoder, which checks
// (protobuf-go's Marshal does), and in a guest every loop iteration costs
// an exit to the host (wazero's check for a stopped call), so checking the
// strings again would cost ~15% of a CreateContainer call.
func decode(fn string, b []byte, m proto.Message) error {
	if err := (fastdecode.UnmarshalOptions{TrustUTF8: true}).Unmarshal(b, m); err != nil {
		return fmt.Errorf("wasmguest: decoding the %s request: %w", fn, err)
	}
	return nil
}

// panicError is the error a recovered handler panic becomes.
type panicError struct {
	handler string
	value   any
}

// Error implements the error interface.
func (e *panicError) Error() string {
	return fmt.Sprintf("wasmguest: %s handler panicked: %v", e.handler, e.value)
}

// invoke calls a handler, recovering a panic into an error (and logging
// its stack).
func (g *Guest) invoke(name string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{handler: name, value: v}
			g.cfg.log(api.LogRequest_LEVEL_ERROR, err.Error()+"\n"+string(debug.Stack()))
		}
	}()
	return fn()
}
