package adaptation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/protobuf/proto"
)

// Defaults of the tunables other than the numeric bounds (limits.go);
// each has an option that overrides it.
const (
	// DefaultPluginDir is where pre-installed plugins are looked for.
	DefaultPluginDir = "/opt/nri/plugins"
	// DefaultConfigDir holds the configuration files of pre-installed
	// plugins (IDX-NAME.conf or NAME.conf).
	DefaultConfigDir = "/etc/nri/conf.d"
	// DefaultShutdownTimeout bounds the Shutdown request sent to a plugin
	// that is replaced or disconnected (Stop uses its context instead).
	DefaultShutdownTimeout = time.Second
	// MaxSyncMessageSize is the largest encoded size of one Synchronize
	// request: the pods and containers are split into parts no larger
	// than this (a single object larger than it travels alone).
	MaxSyncMessageSize = 1 << 20
	// MaxMessageSize is the largest ttrpc message NRI carries (ttrpc's
	// own limit, which upstream NRI keeps): no request to a plugin and
	// no answer from one can be larger.
	MaxMessageSize = 4 << 20
	// DefaultValidatorName and DefaultValidatorIndex identify the builtin
	// validator installed by [WithDefaultValidator] (the same identity
	// as upstream's).
	DefaultValidatorName  = "default-validator"
	DefaultValidatorIndex = "00"
)

// Option configures an [Adaptation] in [New].
type Option func(*config) error

// PluginPolicy is the administrator's policy for one plugin, set with
// [WithPluginOverride]. It takes precedence over what the plugin asks for.
type PluginPolicy struct {
	// FailurePolicy, if not nil, replaces the plugin's own
	// ConfigureResponse.failure_policy.
	FailurePolicy *api.FailurePolicy
	// Required makes CreateContainer fail while the plugin is not
	// connected and synchronized, and when it times out or loses its
	// connection while handling the request. It applies to the
	// containers in the plugin's scope only (see Scope): while the
	// plugin is not connected, the scope it last registered with, or
	// this Scope if it never registered.
	Required bool
	// Scope, if not nil, limits the pods and containers the plugin
	// receives events about, for plugins that cannot be changed to
	// declare a scope themselves: the plugin's effective scope is this
	// one AND its own ConfigureResponse.scope. See docs/scope.md.
	Scope *api.PluginScope
}

// Backoff is the restart schedule of exited pre-installed plugins: the
// first restart waits Initial, each further one twice as long as the one
// before, up to Max. A plugin that stayed up for Max or longer starts
// over at Initial.
type Backoff struct {
	// Initial is the wait before the first restart (> 0).
	Initial time.Duration
	// Max caps the wait (>= Initial).
	Max time.Duration
}

type builtinSpec struct {
	idx, name string
	svc       api.PluginService
}

type config struct {
	pluginDir  string
	configDir  string
	socketPath string
	noListen   bool
	// limits are the numeric bounds (limits.go); New resolves them.
	limits          Limits
	builtins        []builtinSpec
	logger          *slog.Logger
	supported       api.EventMask
	overrides       map[string]PluginPolicy
	restart         *Backoff
	pluginArgs      map[string][]string
	env             []string
	observer        Observer        // see observer.go
	refusalObserver RefusalObserver // likewise
	applied         *capability.Set // nil: capability.All(); see capabilities.go
	// Embedding a runtime (see embed_sync.go, embed_hooks.go).
	syncFunc    SyncFunc
	clientOpts  []ttrpc.ClientOpts
	serverOpts  []ttrpc.ServerOpt
	recorders   []MetricsRecorder
	deprecation DeprecationRecorder
	// WASM plugins (see wasm.go, wasmload.go).
	wasmCacheDir  string
	wasmCtxChecks bool // see WithWASMContextChecks
	// wasmLoad is wasmhost.Load (tests watch it).
	wasmLoad func(ctx context.Context, path string, opts wasmhost.Options) (*wasmhost.Plugin, error)
	// afterBind, if set, is called with the path the socket was bound
	// to, at once (tests).
	afterBind func(path string)
	// cel compiles the CEL expressions of scopes; nil without WithCEL
	// (scope.go).
	cel filter.CELCompiler
	// adminScopes are the compiled PluginPolicy scopes, by full name
	// (compileAdminScopes).
	adminScopes map[string]*filter.Filter
	// The administrator's policy (policy.go): policy given with
	// WithPolicy, or the file of WithPolicyFile, looked at every
	// Limits.PolicyReloadInterval.
	policy     *policy.Policy
	policyFile string
	// procRoot is where procfs is mounted, for the identities of
	// external plugins (identify.go); empty: /proc. Tests set it.
	procRoot string
}

func defaultConfig() config {
	return config{
		pluginDir:   DefaultPluginDir,
		configDir:   DefaultConfigDir,
		socketPath:  api.DefaultSocketPath,
		limits:      DefaultLimits(),
		wasmLoad:    wasmhost.Load,
		logger:      slog.New(slog.DiscardHandler),
		supported:   api.AllEvents,
		overrides:   map[string]PluginPolicy{},
		adminScopes: map[string]*filter.Filter{},
		pluginArgs:  map[string][]string{},
	}
}

func positive(what string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("adaptation: %s must be positive, got %v", what, d)
	}
	return nil
}

// WithPluginDir sets the directory of pre-installed plugins (default
// [DefaultPluginDir]): executables, launched as processes, and
// WebAssembly modules, loaded in-process (see [WithWASMCacheDir]). An
// empty path disables pre-installed plugins.
func WithPluginDir(path string) Option {
	return func(c *config) error { c.pluginDir = path; return nil }
}

// WithConfigDir sets the directory of pre-installed plugins'
// configuration files (default [DefaultConfigDir]).
func WithConfigDir(path string) Option {
	return func(c *config) error { c.configDir = path; return nil }
}

// WithSocketPath sets the unix socket on which external plugins connect
// (default api.DefaultSocketPath). Its directory is created (mode 0700)
// if absent; an existing one must be owned by the runtime's effective
// user and not writable by its group or others, else Start fails. The
// socket is bound in a private directory made next to it, given mode
// 0600 and renamed into place, so that no other user can connect at any
// moment; that private path, the directory's plus at most 18 bytes,
// must fit the 107 bytes of a unix socket path too.
func WithSocketPath(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("adaptation: empty socket path")
		}
		c.socketPath = path
		return nil
	}
}

// WithDisabledExternalConnections makes [Adaptation.Start] not listen on
// the socket. [Adaptation.ServeConn] still accepts connections handed to
// it.
func WithDisabledExternalConnections() Option {
	return func(c *config) error { c.noListen = true; return nil }
}

// WithBuiltinPlugin adds an in-process plugin. svc is called exactly like
// a plugin over ttrpc, starting with Configure; it must honour the
// deadlines of the contexts it is given.
func WithBuiltinPlugin(idx, name string, svc api.PluginService) Option {
	return func(c *config) error {
		if err := api.CheckPluginIndex(idx); err != nil {
			return fmt.Errorf("adaptation: builtin plugin %q: %w", name, err)
		}
		if err := api.CheckPluginName(name); err != nil {
			return fmt.Errorf("adaptation: builtin plugin: %w", err)
		}
		if svc == nil {
			return fmt.Errorf("adaptation: builtin plugin %q: nil service", api.FullPluginName(idx, name))
		}
		for _, b := range c.builtins {
			if b.idx == idx && b.name == name {
				return fmt.Errorf("adaptation: builtin plugin %q added twice", api.FullPluginName(idx, name))
			}
		}
		c.builtins = append(c.builtins, builtinSpec{idx: idx, name: name, svc: svc})
		return nil
	}
}

// WithLogger sets the logger (default: discard everything).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("adaptation: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithSupportedEvents sets the events this runtime delivers (default
// api.AllEvents). It is advertised in ConfigureRequest.supported_events;
// plugins subscribing to anything else are refused.
func WithSupportedEvents(m api.EventMask) Option {
	return func(c *config) error {
		if u := m.Unknown(); u != 0 {
			return fmt.Errorf("adaptation: supported events include unknown bits 0x%x", uint32(u))
		}
		c.supported = m
		return nil
	}
}

// WithPluginOverride sets the administrator's policy for the plugin
// fullName ("IDX-NAME").
func WithPluginOverride(fullName string, p PluginPolicy) Option {
	return func(c *config) error {
		if _, _, err := api.ParsePluginName(fullName); err != nil {
			return fmt.Errorf("adaptation: plugin override: %w", err)
		}
		if fp := p.FailurePolicy; fp != nil {
			p.FailurePolicy = &api.FailurePolicy{FailRequest: fp.GetFailRequest(), KeepConnected: fp.GetKeepConnected()}
		}
		if p.Scope != nil {
			// Compiled by New (compileAdminScopes), with WithCEL
			// whichever order the options come in.
			p.Scope = proto.CloneOf(p.Scope)
		}
		c.overrides[fullName] = p
		return nil
	}
}

// WithRestartLaunched restarts pre-installed plugins whose process exited
// while the Adaptation runs, and loads again WASM plugins that were
// dropped, waiting according to b between attempts.
func WithRestartLaunched(b Backoff) Option {
	return func(c *config) error {
		if err := positive("restart backoff", b.Initial); err != nil {
			return err
		}
		if b.Max < b.Initial {
			return fmt.Errorf("adaptation: restart backoff maximum %v below initial %v", b.Max, b.Initial)
		}
		c.restart = &b
		return nil
	}
}

// WithPluginArgs sets command-line arguments for the pre-installed plugin
// fullName ("IDX-NAME").
func WithPluginArgs(fullName string, args ...string) Option {
	return func(c *config) error {
		if _, _, err := api.ParsePluginName(fullName); err != nil {
			return fmt.Errorf("adaptation: plugin arguments: %w", err)
		}
		c.pluginArgs[fullName] = append([]string(nil), args...)
		return nil
	}
}

// WithPluginEnv adds environment variables ("KEY=value") for every
// launched plugin, after the runtime's own environment and before the
// NRI variables.
func WithPluginEnv(env ...string) Option {
	return func(c *config) error {
		c.env = append(c.env, env...)
		return nil
	}
}

// compileAdminScopes compiles the scopes of the plugin overrides, once all
// options are applied (a scope's CEL expression needs WithCEL).
func (c *config) compileAdminScopes() error {
	for full, p := range c.overrides {
		if p.Scope == nil {
			continue
		}
		f, err := c.compileScope(p.Scope)
		if err != nil {
			return fmt.Errorf("adaptation: plugin override %q: invalid scope: %s", full, scopeMessage(err))
		}
		c.adminScopes[full] = f
	}
	return nil
}
