package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	deviceinjector "github.com/nrikit/nrikit/plugins/device-injector"
	"github.com/nrikit/nrikit/plugins/differ"
	gpuenv "github.com/nrikit/nrikit/plugins/gpu-env"
	hookinjector "github.com/nrikit/nrikit/plugins/hook-injector"
	"github.com/nrikit/nrikit/plugins/logger"
	ulimitadjuster "github.com/nrikit/nrikit/plugins/ulimit-adjuster"
	"github.com/nrikit/nrikit/simulator"
	"github.com/nrikit/nrikit/simulator/pluginmain"
)

// samplePlugins are the plugins built into the binary, by name.
func samplePlugins() map[string]pluginmain.MainFunc {
	return map[string]pluginmain.MainFunc{
		logger.Name:         logger.Main,
		differ.Name:         differ.Main,
		deviceinjector.Name: deviceinjector.Main,
		hookinjector.Name:   hookinjector.Main,
		ulimitadjuster.Name: ulimitadjuster.Main,
		gpuenv.Name:         gpuenv.Main,
	}
}

func sampleNames() []string {
	names := make([]string, 0, 6)
	for n := range samplePlugins() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// launcher starts sample plugins as this binary's `plugin NAME` command.
func launcher() (simulator.Launcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the nri executable: %w", err)
	}
	plugins := samplePlugins()
	return func(name string) (string, []string, bool) {
		if _, ok := plugins[name]; !ok {
			return "", nil, false
		}
		return exe, []string{"plugin", name}, true
	}, nil
}

func newPluginCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "plugin NAME [PLUGIN FLAGS]",
		Short: "Run one of the sample plugins built into nri",
		Long: `Run a sample plugin: ` + strings.Join(sampleNames(), ", ") + `.

A runtime that launches the plugin (nri run does, through its plugin directory) hands it
its socket and identity; started by hand, the plugin connects to a runtime's socket and
needs an index. Every plugin takes -idx, -name, -socket, -log-level and the scope flags
(-pod-selector, -namespace, -container, -image, -runtime-handler, -cel, -all); run
'nri plugin NAME -help' for a plugin's own flags.`,
		Example: `  # Connect the logger to a runtime's socket (such as nri serve's).
  nri plugin logger -idx 10 -socket /tmp/nri.sock

  # Only CreateContainer and StopContainer, only in namespace ml.
  nri plugin logger -idx 10 -socket /tmp/nri.sock -events CreateContainer,StopContainer -namespace ml`,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
				return c.Help()
			}
			main, ok := samplePlugins()[args[0]]
			if !ok {
				return codef(exitUsage, "no sample plugin %q (one of %s)", args[0], strings.Join(sampleNames(), ", "))
			}
			err := main(c.Context(), args[1:], g.stderr)
			switch code := pluginmain.ExitCode(err, g.stderr); code {
			case 0:
				return nil
			default:
				return withCode(code, fmt.Errorf("plugin %s: %w", args[0], errReported))
			}
		},
	}
}
