package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/nrikit/nrikit/cmd/nri/internal/checkcmd"
	"github.com/spf13/cobra"
)

// globals are the flags of every command.
type globals struct {
	logLevel  string
	logFormat string
	color     string
	stdout    io.Writer
	stderr    io.Writer
}

// logger returns the logger for --log-level and --log-format, writing
// to stderr.
func (g *globals) logger() (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, codef(exitUsage, "invalid --log-level %q: want debug, info, warn or error", g.logLevel)
	}
	if g.logFormat != logFormatText && g.logFormat != logFormatJSON {
		return nil, codef(exitUsage, "invalid --log-format %q: want text or json", g.logFormat)
	}
	return slog.New(newLogHandler(g.stderr, g.logFormat, l)), nil
}

// useColor decides whether the output to w is coloured.
func (g *globals) useColor(w io.Writer) (bool, error) {
	switch g.color {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		return isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb", nil
	}
	return false, codef(exitUsage, "invalid --color %q: want auto, always or never", g.color)
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// version is the module version and VCS revision the binary was built
// from, "(devel) (9654983abcde)": the runtime version the simulated
// runtime tells plugins, and the report's header.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if rev := buildSetting(info, "vcs.revision"); len(rev) >= 12 {
		v += " (" + rev[:12] + ")"
	}
	return v
}

// longVersion is what nri --version prints after the name: the module
// version, the commit with its time and whether the tree had changes,
// and the Go version; or why the commit is unknown (`go run` and
// -buildvcs=false, which CI sets, record none).
func longVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (the binary carries no build information)"
	}
	return describeBuild(info)
}

// describeBuild renders the build information for --version.
func describeBuild(info *debug.BuildInfo) string {
	v := info.Main.Version
	rev := buildSetting(info, "vcs.revision")
	if rev == "" {
		return v + ", commit unknown (built without version control information: go run, or go build -buildvcs=false), " + info.GoVersion
	}
	v += ", commit " + rev
	if t := buildSetting(info, "vcs.time"); t != "" {
		v += " of " + t
	}
	if buildSetting(info, "vcs.modified") == "true" {
		v += ", with uncommitted changes"
	}
	return v + ", " + info.GoVersion
}

// buildSetting returns the value of the build setting key, or "".
func buildSetting(info *debug.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// newRoot builds the command tree; its flags set g.
func newRoot(g *globals) *cobra.Command {
	stdout, stderr := g.stdout, g.stderr
	root := &cobra.Command{
		Use:   "nri",
		Short: "Node Resource Interface (NRI) runtime simulator and sample plugins",
		Long: `nri shows the Node Resource Interface working end to end, without containerd or
Kubernetes. It runs nrikit's runtime library with real plugin processes over real
sockets, plays a scenario of pods and containers, and reports what every plugin did.

Exit codes:
  0    success
  1    a step did not go as the scenario expects (a refusal it does not expect included)
  2    usage error (a file named on the command line that cannot be read included)
  3    a file's content is invalid: the scenario, or a policy file
  4    a plugin did not register or was lost during the run (or nri serve did not get
       the plugins it waited for); this takes precedence over 1
  5    other errors
  6    nri check: a conformance check failed
  130  interrupted
  141  the reader of the output went away (nri run | head), as a process ended by SIGPIPE`,
		Example: `  # The default scenario: GPU and CPU pods, six sample plugins, a policy of plugin grants.
  nri run

  # Your scenario, as JSON, with your own plugin added.
  nri run my-scenario.yaml --plugin ./bin/50-myplugin --output json

  # Wait for an external plugin on a socket, then play the serve scenario.
  nri serve --socket /tmp/nri.sock --wait-plugins 1`,
		Version:       longVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "runtime and plugin log level on stderr: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", logFormatText, "log line format on stderr: text (key=value) or json (one object a line); every line has its time")
	root.PersistentFlags().StringVar(&g.color, "color", "auto", "colour the text output: auto (terminals, unless NO_COLOR is set), always or never")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(exitUsage, err)
	})
	root.AddCommand(newRunCommand(g), newServeCommand(g), newPluginCommand(g), checkcmd.New(), newRecordCommand(g), newReplayCommand(g))
	return root
}

// usageArgs wraps a cobra argument check so that its error is a usage
// error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return withCode(exitUsage, err)
		}
		return nil
	}
}

// execute runs the command line args and returns the exit status.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !isCoded(err) && isUsage(err) {
		err = withCode(exitUsage, err)
	}
	return exitCode(ctx, withHelpHint(err, cmd), g)
}

// notice tells the user msg on stderr: "nri: msg", or with --log-format
// json a JSON log line at level (time, level, msg and attrs), so that
// every line on stderr is one JSON object.
func (g *globals) notice(level slog.Level, msg string, attrs ...slog.Attr) {
	if g.logFormat != logFormatJSON {
		fmt.Fprintln(g.stderr, "nri: "+msg)
		return
	}
	l := slog.New(slog.NewJSONHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l.LogAttrs(context.Background(), level, msg, attrs...)
}
