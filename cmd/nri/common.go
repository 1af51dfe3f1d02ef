package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/filearg"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/cmd/nri/internal/simulator"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/internal/wasmhost"
	"github.com/nrikit/nrikit/policy"
)

// runtimeFlags are the flags of the commands that run the simulated
// runtime.
type runtimeFlags struct {
	output          string
	plugins         []string
	pluginDirs      []string
	calls           bool
	reqTimeout      time.Duration
	wasmCacheDir    string
	wasmMemoryLimit string
	policy          string
}

func (f *runtimeFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringArrayVar(&f.plugins, "plugin", nil, "also run this plugin, named IDX-NAME: an executable, or a WASM module (loaded in-process; need not be executable) (repeatable)")
	fl.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "also run the IDX-NAME executables and WASM modules in this directory (repeatable)")
	fl.BoolVar(&f.calls, "calls", false, "list every plugin request with its latency in the text output")
	fl.DurationVar(&f.reqTimeout, "request-timeout", 2*time.Second, "time a plugin has to answer one event")
	fl.StringVar(&f.wasmCacheDir, "wasm-cache-dir", wasmhost.DefaultCacheDir(), `keep the compiled code of WASM plugins in this directory (created 0700 when a WASM plugin runs; it must be yours and not writable by others, else it is not used), so that later runs load them in a fraction of a second; "" compiles them at every run`)
	fl.StringVar(&f.policy, "policy", "", "enforce this policy file of plugin grants (docs/policy.md), as a runtime with adaptation.WithPolicyFile does")
	fl.StringVar(&f.wasmMemoryLimit, "wasm-memory-limit", "", "linear memory limit of each WASM plugin instance, such as 64Mi (64Ki to 4Gi; default: the runtime library's, 128Mi)")
}

// wasmMemoryLimitBytes parses --wasm-memory-limit; 0 means the default.
func (f *runtimeFlags) wasmMemoryLimitBytes() (uint64, error) {
	if f.wasmMemoryLimit == "" {
		return 0, nil
	}
	n, err := scenario.ParseQuantity(f.wasmMemoryLimit)
	if err != nil {
		return 0, codef(exitUsage, "invalid --wasm-memory-limit: %v", err)
	}
	if n < 64<<10 || n > 4<<30 {
		return 0, codef(exitUsage, "invalid --wasm-memory-limit %s: want 64Ki to 4Gi", f.wasmMemoryLimit)
	}
	return uint64(n), nil
}

func (f *runtimeFlags) check() error {
	if f.output != "text" && f.output != "json" {
		return codef(exitUsage, "invalid --output %q: want text or json", f.output)
	}
	if f.reqTimeout <= 0 {
		return codef(exitUsage, "invalid --request-timeout %v: want a positive duration", f.reqTimeout)
	}
	for _, p := range f.plugins {
		if err := checkPluginFile(p); err != nil {
			return codef(exitUsage, "invalid --plugin %s: %v", p, err)
		}
	}
	for _, d := range f.pluginDirs {
		info, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return codef(exitUsage, "invalid --plugin-dir %s: no such directory", d)
		case err != nil:
			return codef(exitUsage, "invalid --plugin-dir %s: %v", d, errors.Unwrap(err))
		case !info.IsDir():
			return codef(exitUsage, "invalid --plugin-dir %s: not a directory", d)
		}
	}
	_, err := f.wasmMemoryLimitBytes()
	return err
}

// checkPluginFile says what is wrong with the file of --plugin: it must
// exist, be a file and be named IDX-NAME. (Whether it is an executable or
// a WASM module the runtime decides, with its reason.)
func checkPluginFile(path string) error {
	if _, _, err := api.ParsePluginName(filepath.Base(path)); err != nil {
		return errors.New("the file must be named IDX-NAME (two digits, a dash and a name), such as 50-myplugin")
	}
	info, err := filearg.Stat(path)
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return errors.New("a directory, not a plugin (use --plugin-dir for a directory of plugins)")
	}
	return nil
}

// loadScenario reads the scenario file, or parses the embedded one.
func loadScenario(path, embeddedName string, embedded []byte) (*scenario.Scenario, error) {
	var sc *scenario.Scenario
	var err error
	if path == "" {
		sc, err = scenario.Parse(embeddedName, embedded)
	} else {
		if err := filearg.Check(path); err != nil {
			return nil, codef(exitUsage, "scenario file %s: %v", path, err)
		}
		sc, err = scenario.Load(path)
	}
	var serr *scenario.Error
	if errors.As(err, &serr) {
		return nil, withCode(exitScenario, err)
	}
	return sc, err
}

// simulatorOptions returns the options shared by run and serve.
func (f *runtimeFlags) simulatorOptions(g *globals, extra ...simulator.Option) ([]simulator.Option, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	launch, err := launcher(g)
	if err != nil {
		return nil, err
	}
	opts := []simulator.Option{
		simulator.WithLogger(log),
		simulator.WithLauncher(launch),
		simulator.WithPluginLogLevel(g.logLevel),
		simulator.WithTimeouts(5*time.Second, f.reqTimeout),
		simulator.WithRuntime("nri-simulator", version()),
	}
	for _, p := range f.plugins {
		opts = append(opts, simulator.WithExtraPlugin(p))
	}
	for _, d := range f.pluginDirs {
		opts = append(opts, simulator.WithExtraPluginDir(d))
	}
	cacheDir, err := wasmhost.ToolCacheDir(f.wasmCacheDir)
	if err != nil {
		log.Warn("not using the default WASM compilation cache directory: WASM plugins are compiled at every run", "dir", f.wasmCacheDir, "reason", err)
	}
	opts = append(opts, simulator.WithWASMCacheDir(cacheDir))
	limit, err := f.wasmMemoryLimitBytes()
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		opts = append(opts, simulator.WithWASMMemoryLimit(limit))
	}
	if f.policy != "" {
		// The file a user names: the owner and mode rules of a runtime's
		// policy file do not apply (as for nri check policy).
		if err := filearg.Check(f.policy); err != nil {
			return nil, codef(exitUsage, "invalid --policy %s: %v", f.policy, err)
		}
		p, err := policy.LoadUntrusted(f.policy, policy.WithFilterOptions(filter.WithCEL(celscope.Compile)))
		if err != nil {
			return nil, withCode(exitScenario, fmt.Errorf("--policy: %w", err))
		}
		opts = append(opts, simulator.WithPolicy(p))
	}
	return append(opts, extra...), nil
}

// writeReport prints the report in the chosen format. If the reader of
// stdout went away (nri run | head -1), it returns an error of status
// exitBrokenPipe without a message, as if SIGPIPE had ended the process
// (which main prevents, so that the plugins are stopped and the work
// directory removed).
func (f *runtimeFlags) writeReport(g *globals, r *report.Report) error {
	var err error
	if f.output == "json" {
		err = r.WriteJSON(g.stdout)
	} else {
		var color bool
		if color, err = g.useColor(g.stdout); err != nil {
			return err
		}
		err = r.WriteText(g.stdout, report.TextOptions{Color: color, Calls: f.calls})
	}
	if errors.Is(err, syscall.EPIPE) {
		return withCode(exitBrokenPipe, fmt.Errorf("writing the report: %w", errReported))
	}
	return err
}

// result turns the report's outcome into the command's error. A plugin
// that did not register or was lost comes first: it is the likelier
// cause of steps that went wrong.
func result(r *report.Report) error {
	switch {
	case len(r.RegistrationErrors) > 0 && len(r.Lost) > 0:
		return codef(exitPlugins, "%d plugin(s) did not register and %d were lost: %w", len(r.RegistrationErrors), len(r.Lost), errReported)
	case len(r.RegistrationErrors) > 0:
		return codef(exitPlugins, "%d plugin(s) did not register: %w", len(r.RegistrationErrors), errReported)
	case len(r.Lost) > 0:
		return codef(exitPlugins, "%d plugin(s) were lost during the run: %w", len(r.Lost), errReported)
	case !r.OK:
		return codef(exitSteps, "%d step(s) did not go as expected: %w", len(r.Failures), errReported)
	}
	return nil
}

// stop stops the simulator within a bounded time.
func stop(sim *simulator.Simulator) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sim.Stop(ctx); err != nil {
		return fmt.Errorf("stopping the runtime: %w", err)
	}
	return nil
}

// startError classifies an error of starting the simulator: mistakes in
// the scenario (such as an unknown sample plugin) are scenario errors.
func startError(err error) error {
	var serr *scenario.Error
	if errors.As(err, &serr) {
		return withCode(exitScenario, err)
	}
	return err
}
