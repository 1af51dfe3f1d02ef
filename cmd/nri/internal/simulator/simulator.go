// Package simulator is a container runtime without containers: it hosts
// real NRI plugins (launched processes, external connections, builtin
// plugins) through the real [adaptation] package, keeps pods and
// containers with their OCI specs in memory, and plays a scenario's
// lifecycle steps. It applies the plugins' merged adjustments and updates
// to the specs with [ocispec], and records a timeline: for every event,
// which plugins were called and which were filtered out, what each
// changed, field by field, conflicts and rejections, and latencies. The
// result is a [report.Report].
//
// A Simulator is used once:
//
//	sim, err := simulator.New(sc, simulator.WithLauncher(launch))
//	err = sim.Start(ctx)       // launches the plugins, waits until they registered
//	err = sim.WaitForPlugins(ctx, n) // only with WithSocketPath: external plugins
//	rep := sim.Play(ctx)       // the steps
//	err = sim.Stop(ctx)        // shuts the plugins down, removes the work directory
//
// Plugins named in the scenario are launched through the runtime's plugin
// directory, as a real runtime launches pre-installed plugins: the
// simulator writes a launcher script IDX-NAME per plugin into a temporary
// plugin directory (it changes into the plugin's working directory, where
// the plugin's files are, and execs the plugin), and the plugin's
// configuration into a temporary configuration directory. A WASM plugin
// (a module given as a path, or a Go package the simulator builds into
// one) is put there as the module itself, which the runtime loads
// in-process.
package simulator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/adaptation/runtimemetrics"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/report"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
	"github.com/nrikit/nrikit/filter/celscope"
)

// Simulator is a simulated runtime playing one scenario.
type Simulator struct {
	sc    *scenario.Scenario
	cfg   config
	store *store
	tl    *timeline
	// members are the plugins that took part, lost ones too.
	members members

	// mu guards the fields below it; it is not held while the runtime
	// starts, which logs registration failures (see regMu).
	mu        sync.Mutex
	a         *adaptation.Adaptation
	workDir   string
	installed []installed
	played    bool

	regMu   sync.Mutex
	regErrs []report.RegistrationError

	// list and update are the runtime's ListFunc and UpdateFunc: the
	// store's, or a replay's (replay.go).
	list   adaptation.ListFunc
	update adaptation.UpdateFunc
}

// New returns a simulator for the scenario.
func New(sc *scenario.Scenario, opts ...Option) (*Simulator, error) {
	if sc == nil {
		return nil, errors.New("nil scenario")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	st := newStore(sc)
	s := &Simulator{sc: sc, cfg: cfg, store: st, tl: &timeline{names: st.containerName}}
	st.onUpdate = s.unsolicitedUpdate
	st.onEvict = s.unsolicitedEviction
	s.list, s.update = st.list, st.update
	return s, nil
}

// Start prepares the plugin directory, starts the runtime and waits until
// the launched plugins registered or failed to (failures are recorded in
// the report, and told to WithRegistrationErrors). With WithSocketPath
// the runtime then accepts external plugins.
func (s *Simulator) Start(ctx context.Context) error {
	a, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return fmt.Errorf("starting the runtime: %w", err)
	}
	return nil
}

// prepare creates the work directory and the runtime. The plugins are
// installed (which may build WASM plugins, taking long) without holding
// s.mu.
func (s *Simulator) prepare(ctx context.Context) (*adaptation.Adaptation, error) {
	work, err := s.makeWorkDir()
	if err != nil {
		return nil, err
	}
	pluginDir, confDir, dataDir := filepath.Join(work, "plugins"), filepath.Join(work, "conf.d"), filepath.Join(work, "data")
	for _, d := range []string{pluginDir, confDir, dataDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating the work directory: %w", err)
		}
	}
	inst, err := s.installPlugins(ctx, pluginDir, confDir, dataDir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installed = inst
	opts, err := s.adaptationOptions(pluginDir, confDir)
	if err != nil {
		return nil, err
	}
	a, err := adaptation.New(s.cfg.runtimeName, s.cfg.runtimeVersion, s.list, s.update, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the runtime: %w", err)
	}
	s.a = a
	return a, nil
}

// hasWASM reports whether a WASM plugin is installed.
func hasWASM(inst []installed) bool {
	return slices.ContainsFunc(inst, func(p installed) bool { return p.wasm })
}

// makeWorkDir creates the work directory, once.
func (s *Simulator) makeWorkDir() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workDir != "" {
		return "", errors.New("already started")
	}
	work, err := os.MkdirTemp("", "nri-simulator-")
	if err != nil {
		return "", fmt.Errorf("creating the work directory: %w", err)
	}
	s.workDir = work
	return work, nil
}

func (s *Simulator) adaptationOptions(pluginDir, confDir string) ([]adaptation.Option, error) {
	opts := []adaptation.Option{
		adaptation.WithPluginDir(pluginDir),
		adaptation.WithConfigDir(confDir),
		adaptation.WithLogger(slog.New(newTap(s.cfg.logger.Handler(), s.registrationFailed, s.members.disconnected)).With("component", "runtime")),
		adaptation.WithRegistrationTimeout(s.cfg.registrationTimeout),
		adaptation.WithRequestTimeout(s.cfg.requestTimeout),
		// Scenarios and their plugins may use CEL scopes.
		adaptation.WithCEL(celscope.Compile),
	}
	opts = append(opts, s.observerOptions()...)
	if s.cfg.socketPath != "" {
		opts = append(opts, adaptation.WithSocketPath(s.cfg.socketPath))
	} else {
		opts = append(opts, adaptation.WithDisabledExternalConnections())
	}
	for _, p := range s.installed {
		if len(p.args) > 0 {
			opts = append(opts, adaptation.WithPluginArgs(p.full, p.args...))
		}
	}
	// --policy replaces the scenario's own policy.
	if pol := cmp.Or(s.cfg.policy, s.sc.CompiledPolicy); pol != nil {
		opts = append(opts, adaptation.WithPolicy(pol))
	}
	opts = append(opts, s.validatorOptions()...)
	opts = append(opts, s.cfg.adaptation...)
	if s.cfg.metrics != nil {
		m, err := runtimemetrics.New(s.cfg.metrics)
		if err != nil {
			return nil, err
		}
		opts = append(opts, adaptation.WithMetricsRecorder(m))
	}
	if s.cfg.wasmCacheDir != "" && hasWASM(s.installed) {
		opts = append(opts, adaptation.WithWASMCacheDir(s.cfg.wasmCacheDir))
	}
	if s.cfg.wasmMemoryLimit != 0 {
		opts = append(opts, adaptation.WithWASMMemoryLimit(s.cfg.wasmMemoryLimit))
	}
	return opts, nil
}

// WaitForPlugins waits until at least n plugins other than the launched
// and builtin ones are active, or ctx ends; the error then says how many
// registered, and which registrations failed.
func (s *Simulator) WaitForPlugins(ctx context.Context, n int) error {
	a := s.adaptation()
	if a == nil {
		return errors.New("not started")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := s.externalActive()
		if len(got) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("waited for %d external plugin(s), %d registered", n, len(got))
			if len(got) > 0 {
				msg += fmt.Sprintf(" (%v)", got)
			}
			for _, e := range s.registrationErrors() {
				msg += fmt.Sprintf("; %s: %s", e.Plugin, e.Reason)
			}
			return fmt.Errorf("%s: %w", msg, ctx.Err())
		case <-tick.C:
		}
	}
}

// externalActive names the active external plugins.
func (s *Simulator) externalActive() []string {
	var out []string
	for _, p := range s.adaptation().Plugins() {
		if p.Kind == adaptation.KindExternal && p.State == adaptation.StateActive {
			out = append(out, p.FullName())
		}
	}
	return out
}

// Plugins reports the runtime's plugins.
func (s *Simulator) Plugins() []adaptation.PluginInfo {
	if a := s.adaptation(); a != nil {
		return a.Plugins()
	}
	return nil
}

func (s *Simulator) adaptation() *adaptation.Adaptation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.a
}

// Stop shuts the runtime and its plugins down and removes the work
// directory.
func (s *Simulator) Stop(ctx context.Context) error {
	s.mu.Lock()
	a, work := s.a, s.workDir
	s.mu.Unlock()
	var err error
	if a != nil {
		err = a.Stop(ctx)
	}
	if work != "" {
		if rerr := os.RemoveAll(work); rerr != nil && err == nil {
			err = fmt.Errorf("removing work directory: %w", rerr)
		}
	}
	return err
}

// registrationFailed records a plugin the runtime refused or lost.
func (s *Simulator) registrationFailed(plugin, reason string) {
	s.regMu.Lock()
	if slices.ContainsFunc(s.regErrs, func(e report.RegistrationError) bool { return e.Plugin == plugin && e.Reason == reason }) {
		s.regMu.Unlock()
		return
	}
	s.regErrs = append(s.regErrs, report.RegistrationError{Plugin: plugin, Reason: reason})
	s.regMu.Unlock()
	if f := s.cfg.onRegistrationError; f != nil {
		f(plugin, reason)
	}
}

func (s *Simulator) registrationErrors() []report.RegistrationError {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	return slices.Clone(s.regErrs)
}

// subscribers returns, per event, the active plugins subscribed to it.
func subscribers(plugins []adaptation.PluginInfo) map[string][]string {
	out := map[string][]string{}
	for _, p := range plugins {
		if p.State != adaptation.StateActive {
			continue
		}
		events := p.Events
		if events == 0 {
			events = api.AllEvents
		}
		for _, e := range events.Events() {
			out[e.Name()] = append(out[e.Name()], p.FullName())
		}
	}
	return out
}
