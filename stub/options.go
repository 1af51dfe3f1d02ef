package stub

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/stub/handler"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// config is the stub's configuration, set by options. It is not changed
// after New.
type config struct {
	name, idx    string
	socketPath   string
	dialer       func(string) (net.Conn, error)
	conn         net.Conn
	logger       *slog.Logger
	clientOpts   []ttrpc.ClientOpts
	serverOpts   []ttrpc.ServerOpt
	subscription api.EventMask
	required     api.EventMask
	policy       *api.FailurePolicy
	askTimeout   time.Duration
	regTimeout   time.Duration
	scope        *api.PluginScope
	cel          filter.CELCompiler // see WithCEL
	onClose      func(error)
	maxProcs     int            // see WithMaxProcs
	syncGC       int            // see WithSyncGCPercent
	observer     Observer       // see WithObserver
	config       string         // see WithDefaultConfig
	requiredCaps capability.Set // see WithRequiredCapabilities
	observeOnly  bool           // see WithObserveOnly

	reconnectInitial, reconnectMax time.Duration
}

func defaultConfig() config {
	return config{
		socketPath: api.DefaultSocketPath,
		logger:     slog.New(slog.DiscardHandler),
		regTimeout: api.DefaultRegistrationTimeout,
	}
}

// Option configures a stub created with [New] or [NewBuiltin]. An option
// given an invalid value makes New fail.
type Option func(*config) error

// WithPluginName sets the plugin's name (without index). A name given by
// the runtime to a plugin it launched (NRI_PLUGIN_NAME) takes precedence.
func WithPluginName(name string) Option {
	return func(c *config) error {
		if err := api.CheckPluginName(name); err != nil {
			return fmt.Errorf("stub: WithPluginName: %w", err)
		}
		c.name = name
		return nil
	}
}

// WithPluginIdx sets the plugin's two-digit index. An index given by the
// runtime to a plugin it launched (NRI_PLUGIN_IDX) takes precedence.
func WithPluginIdx(idx string) Option {
	return func(c *config) error {
		if err := api.CheckPluginIndex(idx); err != nil {
			return fmt.Errorf("stub: WithPluginIdx: %w", err)
		}
		c.idx = idx
		return nil
	}
}

// WithSocketPath sets the runtime's socket that an external plugin dials;
// the default is [api.DefaultSocketPath].
func WithSocketPath(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("stub: WithSocketPath: empty path")
		}
		c.socketPath = path
		return nil
	}
}

// WithDialer sets the function an external plugin uses to connect to the
// runtime's socket path; the default dials a unix socket. It is called
// again for every reconnection (see [WithReconnect]).
func WithDialer(dial func(path string) (net.Conn, error)) Option {
	return func(c *config) error {
		if dial == nil {
			return errors.New("stub: WithDialer: nil dialer")
		}
		c.dialer = dial
		return nil
	}
}

// WithConnection makes the stub use conn, an established connection to
// the runtime, instead of the inherited socket or dialing. The stub owns
// conn and closes it when it stops. A connection can be used by one Start
// only, and cannot be re-established by [WithReconnect].
func WithConnection(conn net.Conn) Option {
	return func(c *config) error {
		if conn == nil {
			return errors.New("stub: WithConnection: nil connection")
		}
		c.conn = conn
		return nil
	}
}

// WithLogger sets the logger of the stub. The default discards all
// messages.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) error {
		if logger == nil {
			return errors.New("stub: WithLogger: nil logger")
		}
		c.logger = logger
		return nil
	}
}

// WithTTRPCOptions adds options for the ttrpc client (of the Runtime
// service) and the ttrpc server (of the Plugin service).
func WithTTRPCOptions(client []ttrpc.ClientOpts, server []ttrpc.ServerOpt) Option {
	return func(c *config) error {
		c.clientOpts = append(c.clientOpts, client...)
		c.serverOpts = append(c.serverOpts, server...)
		return nil
	}
}

// WithSubscription sets the events the plugin subscribes to, instead of
// all events it implements handlers for. mask must be a non-empty subset
// of the implemented events. A non-zero mask returned by the plugin's
// Configure handler takes precedence.
func WithSubscription(mask api.EventMask) Option {
	return func(c *config) error {
		if mask == 0 {
			return errors.New("stub: WithSubscription: empty event mask")
		}
		if u := mask.Unknown(); u != 0 {
			return fmt.Errorf("stub: WithSubscription: unknown event bits 0x%x", uint32(u))
		}
		c.subscription = mask
		return nil
	}
}

// WithRequiredEvents names events the plugin cannot work without:
// registration fails, with an error naming them, if the runtime cannot
// deliver them. Other events the runtime does not support are dropped
// from the subscription. mask must be a subset of the implemented events.
func WithRequiredEvents(mask api.EventMask) Option {
	return func(c *config) error {
		if u := mask.Unknown(); u != 0 {
			return fmt.Errorf("stub: WithRequiredEvents: unknown event bits 0x%x", uint32(u))
		}
		c.required = mask
		return nil
	}
}

// WithFailurePolicy sets how the runtime treats a failure of the plugin
// (a timeout, a lost connection, a protocol error) to handle a request:
// FailRequest fails the request instead of proceeding without the plugin,
// KeepConnected keeps a plugin that timed out registered instead of
// disconnecting it. Runtimes without failure policy support ignore it.
func WithFailurePolicy(policy *api.FailurePolicy) Option {
	return func(c *config) error {
		if policy == nil {
			return errors.New("stub: WithFailurePolicy: nil policy")
		}
		c.policy = policy
		return nil
	}
}

// WithRequestTimeout asks the runtime for a per-request timeout of d
// instead of its default (a nrikit extension; the runtime caps it to its
// maximum, upstream runtimes ignore it).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("stub: WithRequestTimeout: invalid timeout %v", d)
		}
		c.askTimeout = d
		return nil
	}
}

// WithRegistrationTimeout sets how long Start waits for the registration
// to complete before the runtime has sent its own registration timeout;
// the default is [api.DefaultRegistrationTimeout].
func WithRegistrationTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("stub: WithRegistrationTimeout: invalid timeout %v", d)
		}
		c.regTimeout = d
		return nil
	}
}

// WithScope limits the pods and containers the plugin's handlers are
// called about (see docs/scope.md). The scope is sent to the runtime in
// the Configure response (a nrikit extension): nrikit's runtime then
// sends no events about other pods and containers. A runtime that does
// not evaluate scopes (one that does not advertise its events in
// ConfigureRequest.supported_events: containerd, CRI-O) sends every
// event, and the stub then enforces the scope itself, with the runtime's
// semantics: an event outside the scope is answered without calling the
// handler and without changes (opting out of the pod or container, for
// RunPodSandbox and CreateContainer), and Synchronize hands the handler
// only the pods and containers in scope. For a scope on container
// annotations or with a CEL expression, whose view of a container may
// change after its creation, the stub also subscribes to CreateContainer
// and RemoveContainer, to remember the containers in scope.
//
// A scope that does not compile refuses the registration: nrikit's
// runtime rejects it, and on other runtimes the stub fails Configure with
// the reason. A CEL expression needs [WithCEL] on those runtimes.
func WithScope(scope *api.PluginScope) Option {
	return func(c *config) error {
		if scope == nil {
			return errors.New("stub: WithScope: nil scope")
		}
		c.scope = scope
		return nil
	}
}

// WithDefaultConfig sets the configuration passed to the plugin's
// Configure handler when the runtime sends none. Runtimes send a plugin
// they launch its configuration file (containerd's and CRI-O's
// plugin_config_path) and an external plugin, such as one deployed as a
// DaemonSet, nothing: a plugin takes the same configuration from a file
// of its own (the sample plugins' -config FILE) this way. A non-empty
// configuration from the runtime wins.
func WithDefaultConfig(text string) Option {
	return func(c *config) error {
		c.config = text
		return nil
	}
}

// WithOnClose sets a function called each time a registered connection to
// the runtime ends, with the reason: an error wrapping [ErrConnectionLost]
// or [ErrShutdown], or [ErrClosed] after [Stub.Stop]. It is called from the
// stub's own goroutine, before [Stub.Wait] returns.
func WithOnClose(onClose func(reason error)) Option {
	return func(c *config) error {
		if onClose == nil {
			return errors.New("stub: WithOnClose: nil function")
		}
		c.onClose = onClose
		return nil
	}
}

// WithReconnect makes an external plugin reconnect when it loses a
// registered connection (the runtime restarted or shut it down): it dials
// again after initial, doubling the delay up to max between attempts, and
// registers again; the runtime then synchronizes it with its current
// state. [Stub.Run] and [Stub.Wait] then return only when the stub is
// stopped. The option has no effect for a plugin launched by the runtime
// (NRI_PLUGIN_SOCKET), which the runtime relaunches itself, and New rejects
// it together with [WithConnection], which cannot be re-established.
func WithReconnect(initial, max time.Duration) Option {
	return func(c *config) error {
		if initial <= 0 || max < initial {
			return fmt.Errorf("stub: WithReconnect: invalid backoff %v..%v", initial, max)
		}
		c.reconnectInitial, c.reconnectMax = initial, max
		return nil
	}
}

// WithDeclarations applies a plugin's declarations (subscription, required
// events and capabilities, scope, failure policy, default configuration;
// see [handler.Declarations]) as the options of their non-zero fields
// would: a plugin built both as a process and as a WASM module
// (wasmguest.WithDeclarations) declares them once.
func WithDeclarations(d handler.Declarations) Option {
	return func(c *config) error {
		if err := d.Check(); err != nil {
			return fmt.Errorf("stub: WithDeclarations: %w", err)
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
