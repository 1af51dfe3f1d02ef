package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/cmd/nri/internal/simulator"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/runtimerec"
)

func newRunCommand(g *globals) *cobra.Command {
	var f runtimeFlags
	var timeout time.Duration
	var recordTo, recordConfig string
	c := &cobra.Command{
		Use:   "run [SCENARIO]",
		Short: "Play a scenario with plugin processes and print what every plugin did",
		Long: `Play a scenario (a YAML file; without one, the built-in default scenario) through a
simulated container runtime built on nrikit's runtime library. The scenario's plugins, and
those given with --plugin and --plugin-dir, are launched as processes through the runtime's
plugin directory, as containerd or CRI-O launch pre-installed plugins; WebAssembly plugin
modules there are loaded in-process (their compiled code cached in --wasm-cache-dir). The
output names the policy of plugin grants in force, then a timeline of events (which plugins
were called and which were filtered out, what each changed, the answers the policy refused,
rejections, latencies), then every container's final OCI spec as a diff against the spec the
runtime proposed. A refusal the scenario does not expect (expectRefused) fails the run, and so
does a plugin lost during it. See docs/cli.md for the scenario format and the JSON schema.`,
		Example: `  nri run
  nri run cmd/nri/examples/default.yaml --output json
  nri run my.yaml --plugin ./50-myplugin --log-level info

  # A WebAssembly plugin, built from Go by nri run (needs the Go toolchain).
  nri run cmd/nri/examples/wasm.yaml`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if timeout <= 0 {
				return codef(exitUsage, "invalid --timeout %v: want a positive duration", timeout)
			}
			name, data := defaultScenario()
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			sc, err := loadScenario(path, name, data)
			if err != nil {
				return err
			}
			opts, err := f.simulatorOptions(g)
			if err != nil {
				return err
			}
			if recordTo != "" || recordConfig != "" {
				rec, err := startRunRecording(recordTo, recordConfig)
				if err != nil {
					return err
				}
				defer closeRunRecording(g, rec)
				opts = append(opts, simulator.WithRecording(rec))
			}
			sim, err := simulator.New(sc, opts...)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context(), timeout)
			defer cancel()
			err = runScenario(ctx, g, &f, sim)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.Context().Err() == nil {
				return fmt.Errorf("the scenario did not finish within --timeout %v (a plugin that does not register or answer holds it up; --log-level info shows the plugins' progress): %w", timeout, err)
			}
			return err
		},
	}
	f.register(c)
	c.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up if the scenario has not finished after this long (stopping the plugins then takes a few seconds more at most)")
	c.Flags().StringVar(&recordTo, "record", "", "record the simulated runtime's NRI traffic to this file, with every plugin's answers, for nri replay (values redacted with the key FILE.key; docs/record.md)")
	c.Flags().StringVar(&recordConfig, "record-config", "", "record as this file says (the YAML of a runtime's record.yaml: path, redaction, keep patterns; --record overrides its path)")
	return c
}

// startRunRecording starts recording the simulated runtime into path, as
// the configuration file config says (both optional, one given).
func startRunRecording(path, config string) (*runtimerec.Recording, error) {
	var cfg record.Config
	if config != "" {
		data, err := os.ReadFile(config)
		if err != nil {
			return nil, codef(exitUsage, "--record-config: %v", err)
		}
		if cfg, err = record.ParseConfig(config, string(data)); err != nil {
			return nil, codef(exitUsage, "--record-config: %v", err)
		}
	}
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, codef(exitUsage, "--record: %v", err)
		}
		cfg.Path = abs
	}
	if cfg.Path == "" {
		return nil, codef(exitUsage, "--record-config %s names no path: give one, or --record", config)
	}
	rec, err := runtimerec.Start(cfg, "nri-run", nil)
	if err != nil {
		return nil, codef(exitFailure, "--record: %v", err)
	}
	return rec, nil
}

// closeRunRecording closes the recording once the simulator stopped.
func closeRunRecording(g *globals, rec *runtimerec.Recording) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rec.Close(ctx); err != nil {
		fmt.Fprintf(g.stderr, "nri: closing the recording: %v\n", err)
	}
}

// runScenario starts the simulator, plays, prints the report and stops.
func runScenario(ctx context.Context, g *globals, f *runtimeFlags, s *simulator.Simulator) (err error) {
	defer func() { err = errors.Join(err, stop(s)) }()
	if err := s.Start(ctx); err != nil {
		return startError(err)
	}
	r, err := s.Play(ctx)
	if err != nil {
		return err
	}
	if err := f.writeReport(g, r); err != nil {
		return err
	}
	return result(r)
}
