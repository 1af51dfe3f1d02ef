// Package pluginmain is the command-line entry point shared by nrikit's
// sample plugins (plugins/logger, plugins/gpu-env, ...): the flags every
// one of them takes — identity, runtime socket, log level and event scope
// — and running the plugin's stub until the runtime lets it go.
//
// A sample plugin's Main is
//
//	func Main(ctx context.Context, args []string, stderr io.Writer) error {
//		return pluginmain.Main(ctx, pluginmain.Spec{
//			Name:  "logger",
//			Setup: func(fs *flag.FlagSet) pluginmain.NewFunc { ... },
//		}, args, stderr)
//	}
//
// and it runs the same whether the runtime launched it (the stub then
// takes its identity and socket from the environment) or it was started
// by hand against a runtime's socket (`-idx 10 -socket /run/nri.sock`).
//
// A plugin with a scope (Spec.Scope or the scope flags) passes it to the
// stub ([stub.WithScope]), which sends it to the runtime and enforces it
// itself on runtimes that do not evaluate scopes (containerd, CRI-O). The
// sample plugins are built without CEL support: a -cel expression works
// on nrikit's runtime, which evaluates it, and fails the registration on
// the others, unless the plugin's NewFunc returns
// stub.WithCEL(celscope.Compile).
//
// Started by hand, a plugin reconnects when it loses its connection to
// the runtime (the runtime restarted), with a backoff from
// [ReconnectInitial] to [ReconnectMax], and the runtime synchronizes it
// again; -reconnect=false makes it exit instead. A Shutdown request from
// the runtime ends it either way: runtimes send it to dismiss a plugin
// (nrikit's, when it stops or when a newer connection of the same plugin
// replaces this one; upstream's never send it), and a plugin that came
// back would only be dismissed again. A plugin the runtime launched (with
// an inherited socket) cannot reconnect: the runtime starts it again.
//
// -fail-request asks the runtime for the failure policy fail_request
// ([stub.WithFailurePolicy]): a request the plugin fails (it times out, or
// the runtime's policy refuses its answer) then fails instead of going on
// without the plugin's answer.
//
// -metrics-addr ADDR (such as 127.0.0.1:9090; off by default) serves
// Prometheus metrics at /metrics and the health checks /readyz (200 while
// registered with the runtime) and /livez (200 while connected or
// reconnecting) on ADDR; see package stub/stubmetrics.
//
// Every log line has a time. -log-format json writes the lines as JSON
// objects (slog's JSON handler, with the time in "time") instead of
// slog's key=value text. -log-file PATH appends the lines to PATH
// (created with mode 0640) instead of standard error: containerd and
// CRI-O start pre-installed plugins with standard error on /dev/null.
//
// [Main] leaves GOMAXPROCS alone (the nri tool runs the samples in its own
// process through it); [Command], a sample's executable, calls
// [stub.TuneProcess] first. Its stub relaxes the garbage collector while a
// large Synchronize arrives ([stub.WithSyncGCPercent] with
// [stub.DefaultSyncGCPercent]), unless the GOGC environment variable is
// set.
package pluginmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubmetrics"
)

// The backoff of a reconnecting plugin (see the package documentation).
const (
	ReconnectInitial = time.Second
	ReconnectMax     = 30 * time.Second
)

// LogFileMode is the mode a log file is created with (-log-file).
const LogFileMode = 0o640

// NewFunc builds the plugin once the flags are parsed. It may return
// extra stub options (such as stub.WithSubscription).
type NewFunc func(log *slog.Logger) (plugin any, opts []stub.Option, err error)

// Spec describes a sample plugin to Main.
type Spec struct {
	// Name is the plugin's default name.
	Name string
	// Summary is a one-line description for -help.
	Summary string
	// Scope is the default event scope (nil: all pods and containers);
	// the scope flags replace it.
	Scope *api.PluginScope
	// Setup registers the plugin's own flags and returns the function
	// that builds the plugin after parsing.
	Setup func(fs *flag.FlagSet) NewFunc
	// Config checks a configuration in the plugin's schema, the one its
	// Configure handler parses (from the runtime, or from -config FILE).
	// A -config file it refuses stops the plugin before it connects,
	// with the error. Nil: -config is refused (the plugin has no
	// configuration).
	Config func(config string) error
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// Main parses args (without the program name), runs the plugin until the
// runtime shuts it down, ctx is done, or the connection is lost, and
// returns nil for the first two. Logs go to stderr. flag.ErrHelp is
// returned after -help.
func Main(ctx context.Context, spec Spec, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet(spec.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	fs.StringVar(&c.name, "name", spec.Name, "plugin name")
	fs.StringVar(&c.idx, "idx", "", "plugin index (two digits); required unless the runtime launched the plugin")
	fs.StringVar(&c.socket, "socket", "", "runtime socket to connect to (default "+api.DefaultSocketPath+")")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	format := fs.String("log-format", "text", "log line format: text (key=value) or json")
	logFile := fs.String("log-file", "", "append log lines to this file (created with mode 0640) instead of standard error")
	configFile := fs.String("config", "", "read the plugin's configuration (YAML, the schema of its README) from this file; the runtime's configuration, if it sends one, wins")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve /metrics, /readyz and /livez on this TCP address, such as 127.0.0.1:9090 (default: off)")
	fs.BoolVar(&c.reconnect, "reconnect", true, "when started by hand: reconnect after losing the connection to the runtime (a runtime restart); -reconnect=false exits instead")
	fs.BoolVar(&c.failRequest, "fail-request", false, "ask the runtime to fail a request the plugin fails (a timeout, or an answer the runtime's policy refuses) instead of going on without the plugin's answer")
	c.scope.register(fs, spec.Scope)
	build := spec.Setup(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s: %s\n\nUsage: %s [flags]\n\nFlags:\n", spec.Name, spec.Summary, spec.Name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("%s: unexpected arguments %q", spec.Name, fs.Args())
		fmt.Fprintln(stderr, err)
		return &UsageError{Err: err}
	}
	if *format != "text" && *format != "json" {
		err := fmt.Errorf("%s: invalid value %q for flag -log-format: want text or json", spec.Name, *format)
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return &UsageError{Err: err}
	}
	out := stderr
	if *logFile != "" {
		f, err := OpenLogFile(*logFile)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Name, err)
		}
		defer f.Close()
		out = f
	}
	log, err := NewFormatLogger(out, *level, *format)
	if err != nil {
		return fmt.Errorf("%s: %w", spec.Name, err)
	}
	if *configFile != "" {
		if c.config, err = readConfig(spec, *configFile); err != nil {
			log.Error("bad configuration", "error", err)
			return err
		}
	}
	err = c.run(ctx, spec.Name, log, build)
	if err != nil && *logFile != "" {
		// Standard error may be /dev/null (a pre-installed plugin).
		log.Error("plugin failed", "error", err)
	}
	return err
}

// common are the flags every sample plugin takes that shape its stub.
type common struct {
	name, idx, socket string
	metricsAddr       string
	config            string // the -config file's content
	reconnect         bool
	failRequest       bool // -fail-request: the failure policy asked for
	scope             scopeFlags
}

// run builds the plugin and runs its stub until the runtime shuts it
// down, ctx is done or the connection is lost (without -reconnect).
func (c *common) run(ctx context.Context, name string, log *slog.Logger, build NewFunc) error {
	plugin, extra, err := build(log)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	opts := []stub.Option{stub.WithLogger(log), stub.WithPluginName(c.name)}
	if os.Getenv("GOGC") == "" {
		opts = append(opts, stub.WithSyncGCPercent(stub.DefaultSyncGCPercent))
	}
	if c.idx != "" {
		opts = append(opts, stub.WithPluginIdx(c.idx))
	}
	if c.socket != "" {
		opts = append(opts, stub.WithSocketPath(c.socket))
	}
	if c.config != "" {
		opts = append(opts, stub.WithDefaultConfig(c.config))
	}
	if c.metricsAddr != "" {
		m, err := stubmetrics.New(c.metricsAddr)
		if err != nil {
			return err
		}
		opts = append(opts, stub.WithObserver(m))
	}
	var s *stub.Stub
	if c.reconnect && os.Getenv(api.PluginSocketEnvVar) == "" {
		opts = append(opts, stub.WithReconnect(ReconnectInitial, ReconnectMax), stub.WithOnClose(func(reason error) {
			if errors.Is(reason, stub.ErrShutdown) {
				log.Info("the runtime shut the plugin down: not reconnecting")
				s.Stop()
			}
		}))
	}
	if scope := c.scope.scope(); scope != nil {
		opts = append(opts, stub.WithScope(scope))
	}
	if c.failRequest {
		opts = append(opts, stub.WithFailurePolicy(&api.FailurePolicy{FailRequest: true}))
	}
	s, err = stub.New(plugin, append(opts, extra...)...)
	if errors.Is(err, stub.ErrNoIndex) {
		return &UsageError{Err: fmt.Errorf("%s: -idx is required: give the plugin's two-digit index (such as -idx 10), or name the executable IDX-NAME (such as 10-%s)", name, c.name)}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	err = s.Run(ctx)
	switch {
	case err == nil, errors.Is(err, stub.ErrShutdown), errors.Is(err, stub.ErrClosed), ctx.Err() != nil:
		log.Info("plugin stopped", "reason", err)
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

// UsageError is a mistake on the command line; it has been printed,
// with the usage, to the plugin's stderr. Its ExitCode method is how a
// program that runs a sample plugin's Main without importing this
// package (the nri tool, `nri plugin NAME`) tells it from other errors.
type UsageError struct {
	// Err is the parse error.
	Err error
}

// ExitCode returns 2, the exit status of a usage error.
func (e *UsageError) ExitCode() int { return 2 }

// Error returns the underlying error's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the parse error.
func (e *UsageError) Unwrap() error { return e.Err }

// ConfigParsedBy returns a [Spec.Config] that checks a configuration with
// parse, the plugin's parser (the one its Configure handler uses).
func ConfigParsedBy[C any](parse func(config string) (C, error)) func(config string) error {
	return func(config string) error {
		_, err := parse(config)
		return err
	}
}

// NoFlags returns a [Spec.Setup] for a plugin without flags of its own,
// which build makes, with no extra stub options.
func NoFlags(build func(log *slog.Logger) any) func(*flag.FlagSet) NewFunc {
	return func(*flag.FlagSet) NewFunc {
		return func(log *slog.Logger) (any, []stub.Option, error) { return build(log), nil, nil }
	}
}

// MainFunc is the signature of a sample plugin's Main.
type MainFunc func(ctx context.Context, args []string, stderr io.Writer) error

// Command is a standalone plugin binary's main: it tunes the process for
// a plugin (one P: see [stub.TuneProcess] for the trade-off), runs main
// with the process's arguments until SIGINT or SIGTERM and exits with 0
// on success or -help, 2 after a usage error and 1 after any other error,
// which it prints.
func Command(main MainFunc) {
	stub.TuneProcess()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := main(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(ExitCode(err, os.Stderr))
}

// ExitCode returns the exit status for main's result, printing errors
// that were not printed yet to stderr.
func ExitCode(err error, stderr io.Writer) int {
	var usage *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		return usage.ExitCode()
	}
	fmt.Fprintln(stderr, err)
	return 1
}

// NewLogger returns a text logger on w at the named level. Every line
// starts with its time (time=2006-01-02T15:04:05.000Z07:00), also when
// a runtime launched the plugin: containerd and CRI-O do not capture a
// plugin's output, so the time must be in the line itself.
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	return NewFormatLogger(w, level, "text")
}

// NewFormatLogger is [NewLogger] with a format: "text" (key=value) or
// "json" (one JSON object a line, slog's JSON handler, with the time in
// "time" in RFC 3339 with milliseconds and zone).
func NewFormatLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("invalid log format %q: want text or json", format)
}

// OpenLogFile opens path for appending log lines, creating it with
// [LogFileMode] (and the umask) if it does not exist.
func OpenLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, LogFileMode)
	if err != nil {
		return nil, fmt.Errorf("opening the log file: %w", err)
	}
	return f, nil
}

// readConfig reads and checks the -config file.
func readConfig(spec Spec, path string) (string, error) {
	if spec.Config == nil {
		return "", &UsageError{Err: fmt.Errorf("%s: -config %s: the plugin takes no configuration", spec.Name, path)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: -config: %w", spec.Name, err)
	}
	if err := spec.Config(string(data)); err != nil {
		return "", fmt.Errorf("%s: -config %s: %w", spec.Name, path, err)
	}
	return string(data), nil
}
