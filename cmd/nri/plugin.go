package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/cmd/nri/internal/simulator"
	deviceinjector "github.com/nrikit/nrikit/plugins/device-injector"
	"github.com/nrikit/nrikit/plugins/differ"
	gpuenv "github.com/nrikit/nrikit/plugins/gpu-env"
	hookinjector "github.com/nrikit/nrikit/plugins/hook-injector"
	"github.com/nrikit/nrikit/plugins/logger"
	"github.com/nrikit/nrikit/plugins/recorder"
	ulimitadjuster "github.com/nrikit/nrikit/plugins/ulimit-adjuster"
)

// pluginMain is a sample plugin's Main: it runs the plugin with its
// command-line arguments (without the program name), logging to stderr.
type pluginMain func(ctx context.Context, args []string, stderr io.Writer) error

// samplePlugins are the plugins built into the binary, by name.
func samplePlugins() map[string]pluginMain {
	return map[string]pluginMain{
		logger.Name:         logger.Main,
		differ.Name:         differ.Main,
		deviceinjector.Name: deviceinjector.Main,
		hookinjector.Name:   hookinjector.Main,
		ulimitadjuster.Name: ulimitadjuster.Main,
		gpuenv.Name:         gpuenv.Main,
		recorder.Name:       recorder.Main,
	}
}

// pluginExitCode is the exit status of `nri plugin NAME` after the
// plugin's Main returned err, that of the plugin's own binary: 0 after
// success or -help; the status of an error that carries one (a usage
// error, 2, already printed with the usage); else 1, printing err to
// stderr.
func pluginExitCode(err error, stderr io.Writer) int {
	var coded interface{ ExitCode() int }
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &coded):
		return coded.ExitCode()
	}
	fmt.Fprintln(stderr, err)
	return 1
}

func sampleNames() []string {
	names := make([]string, 0, 6)
	for n := range samplePlugins() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// launcher starts sample plugins as this binary's `plugin NAME` command,
// logging in the format of --log-format.
func launcher(g *globals) (simulator.Launcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the nri executable: %w", err)
	}
	plugins := samplePlugins()
	return func(name string) (string, []string, bool) {
		if _, ok := plugins[name]; !ok {
			return "", nil, false
		}
		args := []string{"plugin", name}
		if g.logFormat == logFormatJSON {
			args = append(args, "-log-format", logFormatJSON)
		}
		return exe, args, true
	}, nil
}

func newPluginCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "plugin NAME [PLUGIN FLAGS]",
		Short: "Run one of the sample plugins built into nri",
		Long: `Run a sample plugin: ` + strings.Join(sampleNames(), ", ") + `.

A runtime that launches the plugin (nri run does, through its plugin directory) hands it
its socket and identity; started by hand, the plugin connects to a runtime's socket and
needs an index. Started by hand, it reconnects when the connection is lost (the runtime
restarted) and the runtime synchronizes it again; -reconnect=false makes it exit instead
(status 1). A Shutdown from the runtime ends it with status 0 either way.

Log lines go to standard error, each with its time; -log-file PATH appends them to PATH
(created with mode 0640) instead, for plugins whose standard error is lost (containerd and
CRI-O start pre-installed plugins with it on /dev/null).

Every plugin takes -idx, -name, -socket, -log-level, -log-file, -reconnect and the scope
flags (-pod-selector, -namespace, -container, -image, -runtime-handler, -cel, -all). A nrikit
runtime filters by the scope; on containerd and CRI-O the plugin filters itself, with the same
rules, except -cel: the sample plugins leave CEL out (a smaller binary), so a -cel scope needs a
nrikit runtime. Run 'nri plugin NAME -help' for a plugin's own flags.`,
		Example: `  # Connect the logger to a runtime's socket (such as nri serve's).
  nri plugin logger -idx 10 -socket /tmp/nri.sock

  # Only CreateContainer and StopContainer, only in namespace ml.
  nri plugin logger -idx 10 -socket /tmp/nri.sock -events CreateContainer,StopContainer -namespace ml

  # On a node: containerd's socket and a log file; it reconnects when containerd restarts.
  nri plugin gpu-env -idx 50 -socket /var/run/nri/nri.sock -log-file /var/log/nri/50-gpu-env.log`,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
				return c.Help()
			}
			if len(args) == 0 {
				return codef(exitUsage, "name the plugin to run, one of %s", strings.Join(sampleNames(), ", "))
			}
			main, ok := samplePlugins()[args[0]]
			if !ok {
				return codef(exitUsage, "no sample plugin %q (one of %s)", args[0], strings.Join(sampleNames(), ", "))
			}
			err := main(c.Context(), args[1:], g.stderr)
			switch code := pluginExitCode(err, g.stderr); code {
			case 0:
				return nil
			default:
				return withCode(code, fmt.Errorf("plugin %s: %w", args[0], errReported))
			}
		},
	}
}
