package simulator

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/record/runtimerec"
)

// Launcher returns how to start the sample plugin called name as a
// process: the executable and its arguments. ok is false if there is no
// sample plugin of that name.
type Launcher func(name string) (exe string, args []string, ok bool)

// Option configures a [Simulator].
type Option func(*config) error

type config struct {
	launcher            Launcher
	extraPlugins        []string
	extraDirs           []string
	socketPath          string
	logger              *slog.Logger
	pluginLogLevel      string
	registrationTimeout time.Duration
	requestTimeout      time.Duration
	runtimeName         string
	runtimeVersion      string
	onRegistrationError func(plugin, reason string)
	metrics             prometheus.Registerer // see WithMetrics
	wasmCacheDir        string
	wasmMemoryLimit     uint64
	policy              *policy.Policy // see WithPolicy
	// adaptation are options of the runtime library added last (see
	// WithRecording, and a replay's).
	adaptation []adaptation.Option
}

func defaultConfig() config {
	return config{
		logger:              slog.New(slog.DiscardHandler),
		pluginLogLevel:      "info",
		registrationTimeout: 5 * time.Second,
		requestTimeout:      2 * time.Second,
		runtimeName:         "nri-simulator",
		runtimeVersion:      "0.1.0",
	}
}

// WithLauncher sets how sample plugins named in the scenario are started;
// without it, a scenario naming a sample plugin is refused.
func WithLauncher(l Launcher) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("nil launcher")
		}
		c.launcher = l
		return nil
	}
}

// WithExtraPlugin adds an executable or a WebAssembly module (which
// need not be executable) named IDX-NAME to the runtime's plugins.
func WithExtraPlugin(path string) Option {
	return func(c *config) error { c.extraPlugins = append(c.extraPlugins, path); return nil }
}

// WithExtraPluginDir adds the executables and WebAssembly modules named
// IDX-NAME in dir to the runtime's plugins.
func WithExtraPluginDir(dir string) Option {
	return func(c *config) error { c.extraDirs = append(c.extraDirs, dir); return nil }
}

// WithSocketPath makes the runtime accept external plugins on the unix
// socket path. Without it, only launched and builtin plugins take part.
func WithSocketPath(path string) Option {
	return func(c *config) error {
		if path == "" {
			return errors.New("empty socket path")
		}
		c.socketPath = path
		return nil
	}
}

// WithLogger sets the runtime's logger; the output of launched plugins is
// logged there too. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithPluginLogLevel sets the -log-level of launched sample plugins
// (default info).
func WithPluginLogLevel(level string) Option {
	return func(c *config) error {
		var l slog.Level
		if err := l.UnmarshalText([]byte(level)); err != nil {
			return fmt.Errorf("invalid plugin log level %q", level)
		}
		c.pluginLogLevel = level
		return nil
	}
}

// WithTimeouts sets the runtime's registration and request timeouts
// (defaults 5s and 2s).
func WithTimeouts(registration, request time.Duration) Option {
	return func(c *config) error {
		if registration <= 0 || request <= 0 {
			return fmt.Errorf("invalid timeouts %v, %v", registration, request)
		}
		c.registrationTimeout, c.requestTimeout = registration, request
		return nil
	}
}

// WithRuntime sets the runtime name and version plugins are told.
func WithRuntime(name, version string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("empty runtime name")
		}
		c.runtimeName, c.runtimeVersion = name, version
		return nil
	}
}

// WithRegistrationErrors sets a function told, as it happens, about every
// plugin the runtime refuses or fails to register, with the reason.
func WithRegistrationErrors(f func(plugin, reason string)) Option {
	return func(c *config) error { c.onRegistrationError = f; return nil }
}

// WithWASMCacheDir sets the directory where the runtime keeps the
// compiled code of WASM plugins, so that a later run loads them fast.
// The simulator creates it (mode 0700) when there is a WASM plugin. ""
// (the default) compiles every module at every start.
func WithWASMCacheDir(dir string) Option {
	return func(c *config) error { c.wasmCacheDir = dir; return nil }
}

// WithWASMMemoryLimit sets the linear memory limit of every WASM plugin
// instance, in bytes (default: the runtime library's).
func WithWASMMemoryLimit(bytes uint64) Option {
	return func(c *config) error {
		if bytes == 0 {
			return errors.New("zero WASM memory limit")
		}
		c.wasmMemoryLimit = bytes
		return nil
	}
}

// WithPolicy makes p the simulated runtime's policy of plugin grants
// (adaptation.WithPolicy): each plugin may change only what its grant
// allows, and the plugins p requires gate pods and containers.
func WithPolicy(p *policy.Policy) Option {
	return func(c *config) error {
		c.policy = p
		return nil
	}
}

// WithRecording records the simulated runtime's NRI traffic into rec, as
// a recording runtime does: with every plugin's answers (docs/record.md).
// Close rec after the simulator stopped.
func WithRecording(rec *runtimerec.Recording) Option {
	return withAdaptationOptions(rec.Options()...)
}

// withAdaptationOptions adds options of the runtime library.
func withAdaptationOptions(opts ...adaptation.Option) Option {
	return func(c *config) error {
		c.adaptation = append(c.adaptation, opts...)
		return nil
	}
}
