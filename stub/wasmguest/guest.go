package wasmguest

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmabi"
	"github.com/nrikit/nrikit/stub/handler"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
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
	ErrNotInterestedInPod = handler.ErrNotInterestedInPod
	// ErrNotInterestedInContainer opts out of events about a container.
	ErrNotInterestedInContainer = handler.ErrNotInterestedInContainer
)

// APIVersion is the version of the WASM ABI the guest implements, the
// value of its plugin_api_version export (upstream's
// PluginPluginAPIVersion).
const APIVersion = wasmabi.APIVersion

// The names of the functions a plugin module exports besides the events'
// (the ABI's, defined once for the guest and the host in
// internal/wasmabi); the events' are generated (events_generated.go).
const (
	FuncConfigure   = wasmabi.FuncConfigure
	FuncSynchronize = wasmabi.FuncSynchronize
	FuncShutdown    = wasmabi.FuncShutdown
	FuncStateChange = wasmabi.FuncStateChange
)

// The short names of the first events' functions, which the guest's API
// has always had; events after them have only the generated name
// (FuncRunPodSandbox for FuncRunPod, ...).
const (
	FuncRunPod        = FuncRunPodSandbox
	FuncUpdatePod     = FuncUpdatePodSandbox
	FuncPostUpdatePod = FuncPostUpdatePodSandbox
	FuncStopPod       = FuncStopPodSandbox
	FuncRemovePod     = FuncRemovePodSandbox
	FuncPostCreate    = FuncPostCreateContainer
	FuncPostStart     = FuncPostStartContainer
	FuncPostUpdate    = FuncPostUpdateContainer
	FuncValidate      = FuncValidateContainerAdjustment
)

// Option configures a [Guest].
type Option func(*config) error

type config struct {
	core pcore.Config
	// compile compiles core.Scope; set by WithScope, so that only a
	// plugin with a scope links the filter (see scope.go).
	compile func(*api.PluginScope) (pcore.Matcher, error)
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
		c.core.Subscription = mask
		return nil
	}
}

// WithRequiredEvents names events the plugin cannot work without: its
// Configure fails, with an error naming them, if the runtime cannot
// deliver them. Other events the runtime does not deliver are dropped
// from the subscription. mask must be a subset of the implemented events.
// As for the stub (stub.WithRequiredEvents), what a runtime delivers is
// what it advertises, else what its NRI version (reported, or inferred
// from its name and version) implies; an unknown runtime is assumed to
// deliver the required events and the oldest NRI release's others.
func WithRequiredEvents(mask api.EventMask) Option {
	return func(c *config) error {
		if u := mask.Unknown(); u != 0 {
			return fmt.Errorf("wasmguest: WithRequiredEvents: unknown event bits 0x%x", uint32(u))
		}
		c.core.Required = mask
		return nil
	}
}

// WithFailurePolicy sends policy with the Configure response (what the
// runtime does when the plugin fails; nil for the runtime's default).
func WithFailurePolicy(policy *api.FailurePolicy) Option {
	return func(c *config) error {
		c.core.Policy = policy
		return nil
	}
}

// WithDefaultConfig sets the configuration passed to the plugin's
// Configure handler when the runtime sends none (a runtime sends a WASM
// plugin its configuration file, if it has one), as the stub's
// WithDefaultConfig does. A non-empty configuration from the runtime
// wins.
func WithDefaultConfig(text string) Option {
	return func(c *config) error {
		c.core.DefaultConfig = text
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

// Guest serves the requests of the WASM ABI with a plugin's handlers: it
// decodes a request, hands it to the transport-free core the stub serves
// its connections with (scope gate, handlers, opt-outs, configuration;
// stub/internal/core), and encodes the answer. A request the plugin has
// no handler for is answered empty. It is the platform-neutral part of
// the package; the module's exports feed it. A Guest serves one request
// at a time, as the host calls it.
type Guest struct {
	s   *pcore.Session
	out []byte // response buffer, reused
}

// New returns a Guest for plugin, which implements some of the handler
// interfaces of package stub/handler ([handler.ConfigureInterface],
// [handler.CreateContainerInterface], …).
func New(plugin any, opts ...Option) (*Guest, error) {
	cfg := config{}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("wasmguest: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.compile != nil {
		cfg.core.Matcher, cfg.core.ScopeErr = cfg.compile(cfg.core.Scope)
	}
	if cfg.log != nil {
		cfg.core.Log = logTo(cfg.log)
	}
	p, err := pcore.New(plugin, cfg.core)
	if err != nil {
		return nil, fmt.Errorf("wasmguest: %w", err)
	}
	return &Guest{s: p.NewSession()}, nil
}

// Implemented returns the events the plugin has handlers for.
func (g *Guest) Implemented() api.EventMask { return g.s.Plugin().Implemented() }

// Handle serves one request: fn is the name of the export called (such as
// [FuncCreateContainer]), req the protobuf encoding of its request. It
// returns the protobuf encoding of the response, valid until the next
// call, or the error to answer with. A handler panic is recovered into an
// error.
func (g *Guest) Handle(fn string, req []byte) ([]byte, error) {
	return g.handle(fn, req, false)
}

// handle is Handle; with owned, req is the guest's to keep (a buffer the
// host wrote and frees after the call, never touching it again), and the
// decoded strings point into it instead of being copied (see decode).
func (g *Guest) handle(fn string, req []byte, owned bool) ([]byte, error) {
	rsp, err := g.dispatch(context.Background(), fn, req, owned)
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

// logTo adapts a log function to the core's diagnostics: the key-value
// pairs follow the message as key=value.
func logTo(log func(api.LogRequest_Level, string)) pcore.LogFunc {
	return func(level pcore.Level, msg string, kv ...any) {
		b := []byte(msg)
		for i := 0; i+1 < len(kv); i += 2 {
			b = fmt.Appendf(b, " %v=%v", kv[i], kv[i+1])
		}
		log(logLevel(level), string(b))
	}
}

// logLevel maps a level of the core's diagnostics to env.log's.
func logLevel(l pcore.Level) api.LogRequest_Level {
	switch {
	case l >= pcore.LevelError:
		return api.LogRequest_LEVEL_ERROR
	case l >= pcore.LevelWarn:
		return api.LogRequest_LEVEL_WARN
	case l >= pcore.LevelInfo:
		return api.LogRequest_LEVEL_INFO
	}
	return api.LogRequest_LEVEL_DEBUG
}

// WithDeclarations applies a plugin's declarations (subscription, required
// events and capabilities, scope, failure policy, default configuration;
// see [handler.Declarations]) as the options of their non-zero fields
// would: a plugin built both as a process (stub.WithDeclarations) and as
// a WASM module declares them once. Like [WithScope], it links the scope
// filter into the module (about 0.6 MB), since a declaration may carry a
// scope; a plugin without one that counts its module's bytes uses the
// other options.
func WithDeclarations(d handler.Declarations) Option {
	return func(c *config) error {
		if err := d.Check(); err != nil {
			return fmt.Errorf("wasmguest: WithDeclarations: %w", err)
		}
		declare := pcore.Declare[Option]{
			Subscription: WithSubscription, RequiredEvents: WithRequiredEvents,
			RequiredCapabilities: WithRequiredCapabilities, Scope: WithScope,
			FailurePolicy: WithFailurePolicy, DefaultConfig: WithDefaultConfig,
			ObserveOnly: WithObserveOnly,
		}
		return pcore.Apply(c, declare.Options(d))
	}
}
