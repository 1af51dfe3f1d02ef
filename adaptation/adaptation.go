package adaptation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/identity"
	"github.com/nrikit/nrikit/policy"
)

// ListFunc returns the pods and containers that exist in the runtime. The
// Adaptation calls it once per plugin that registers, to build the
// plugin's Synchronize request; see the package documentation for what it
// must return relative to the events the runtime has called. It is called
// while the start of event dispatch is held off, so it must be quick and
// must not call into the Adaptation or wait for anything that does. The
// returned objects are read after ListFunc returns and must not be
// modified by the runtime afterwards.
type ListFunc func(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error)

// UpdateFunc applies container updates and evictions that plugins ask for
// on their own (Runtime.UpdateContainers, or in answer to Synchronize). It
// returns the updates it could not apply.
type UpdateFunc func(ctx context.Context, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) (failed []*api.ContainerUpdate, err error)

// Adaptation hosts NRI plugins for a container runtime: it launches
// pre-installed plugins, accepts external ones, runs builtin ones, and
// turns their answers into one result per lifecycle event. Its methods
// are safe for concurrent use.
type Adaptation struct {
	name, version string
	list          ListFunc
	update        UpdateFunc
	cfg           config
	log           *slog.Logger // the runtime's, its strings bounded (logbound.go)
	metrics       *metrics
	// connLog logs about external connections that have not registered,
	// within connLogs's budget.
	connLog  *slog.Logger
	connLogs *logBudget
	// extLogs are the log budgets of external plugins, by full name, and
	// extLogsOthers the one of the names beyond them (guarded by mu).
	extLogs       map[string]*logBudget
	extLogsOthers *logBudget

	// ctx is cancelled by Stop; it bounds every background activity.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts every goroutine the Adaptation starts.
	wg sync.WaitGroup

	// mu guards the plugin registry. It is held only for short critical
	// sections and never across a call to a plugin.
	mu        sync.Mutex
	started   bool
	stopped   bool
	plugins   []*plugin          // synchronizing and active, in invocation order
	admitting map[string]*plugin // registration in progress, by full name
	// reserved are the full names external plugins may not take, with
	// the plugin each is reserved for (see reserve.go).
	reserved map[string]string
	// unregistered counts the external connections that have not
	// completed registration (see WithMaxPendingConnections), and
	// pendingByPeer those of each peer process, by PID (see
	// WithMaxPendingConnectionsPerPeer).
	unregistered  int
	pendingByPeer map[int]int
	listener      net.Listener
	// lastScopes are the effective scopes required plugins last
	// registered with, by full name (see missingRequiredLocked).
	lastScopes map[string]*filter.Filter

	// syncBlocks orders the runtime's PluginSyncBlocks against
	// snapshots (see embed_sync.go).
	syncBlocks syncGate
	// wasm is the compilation cache of WASM plugins (wasm.go).
	wasm wasmRuntime
	// digests caches the digests of external plugins' executables
	// (identify.go).
	digests *identity.DigestCache

	// pol is the administrator's policy in force (policy.go), written
	// under mu; nil: none. reloadMu serialises its reloads and guards
	// polFile.
	pol      atomic.Pointer[policy.Policy]
	reloadMu sync.Mutex
	polFile  policyFile
	// objects is the where index (whereindex.go); nil unless a reload
	// changed a plugin's where.
	objects atomic.Pointer[whereIndex]
}

// New creates an Adaptation for the runtime runtimeName/runtimeVersion.
// list and update are the runtime's callbacks (both required, except
// that list must be nil when [WithSyncFunc] is given). Nothing is
// started until [Adaptation.Start].
func New(runtimeName, runtimeVersion string, list ListFunc, update UpdateFunc, opts ...Option) (*Adaptation, error) {
	if update == nil {
		return nil, errors.New("adaptation: nil UpdateFunc")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("adaptation: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	switch {
	case list == nil && cfg.syncFunc == nil:
		return nil, errors.New("adaptation: nil ListFunc")
	case list != nil && cfg.syncFunc != nil:
		return nil, errors.New("adaptation: both a ListFunc and a SyncFunc given")
	}
	if err := cfg.compileAdminScopes(); err != nil {
		return nil, err
	}
	m := newMetrics(cfg.recorders)
	if m != nil {
		cfg.observer = observerWithRecorder(cfg.observer, m.rec)
	}
	cfg.limits = cfg.limits.resolved()
	ctx, cancel := context.WithCancel(context.Background())
	a := &Adaptation{
		name:       runtimeName,
		version:    runtimeVersion,
		list:       list,
		update:     update,
		cfg:        cfg,
		log:        slog.New(boundedHandler{h: cfg.logger.Handler()}),
		metrics:    m,
		ctx:        ctx,
		cancel:     cancel,
		admitting:  map[string]*plugin{},
		reserved:   map[string]string{},
		lastScopes: map[string]*filter.Filter{},
		digests:    identity.NewDigestCache(digestCacheSize),
	}
	a.connLogs = a.newLogBudget(a.log.With("source", "plugin connections"))
	a.connLog = a.connLogs.logger(a.log.Handler())
	a.reserveBuiltinNames()
	if err := a.initPolicy(); err != nil {
		cancel()
		return nil, err
	}
	return a, nil
}

// Start registers the builtin plugins, launches (or loads) the
// pre-installed ones and, unless disabled, listens for external plugins
// meanwhile. It returns once every builtin and pre-installed plugin is
// synchronized or has failed (failures are logged, not returned), or when
// ctx is done. It fails if the plugin directory cannot be read or the
// socket cannot be set up.
func (a *Adaptation) Start(ctx context.Context) error {
	a.mu.Lock()
	switch {
	case a.stopped:
		a.mu.Unlock()
		return ErrStopped
	case a.started:
		a.mu.Unlock()
		return errors.New("adaptation: already started")
	}
	a.started = true
	a.mu.Unlock()

	launch, err := a.discover()
	if err != nil {
		return err
	}
	if a.cfg.policyFile != "" {
		a.goOwned(a.watchPolicy)
	}
	a.reservePreinstalledNames(launch)
	a.log.Info("starting NRI", "runtime", a.name, "version", a.version,
		"builtin", len(a.cfg.builtins), "preinstalled", len(launch))

	var builtins sync.WaitGroup
	for _, b := range a.cfg.builtins {
		builtins.Add(1)
		a.goOwned(func() {
			defer builtins.Done()
			if err := a.startBuiltin(ctx, b); err != nil {
				a.log.Error("builtin plugin failed to start", "plugin", api.FullPluginName(b.idx, b.name), "error", err)
			}
		})
	}
	// Each supervisor reports the outcome of its plugin's first start;
	// failures are logged as they come, not in the plugins' order.
	type outcome struct {
		full string
		err  error
	}
	outcomes := make(chan outcome, len(launch))
	for _, l := range launch {
		a.goOwned(func() { a.supervise(l, func(err error) { outcomes <- outcome{l.full, err} }) })
	}
	// External plugins may connect while the others start: a plugin slow
	// to synchronize, or a WASM module compiling, holds up none of them.
	if a.cfg.noListen {
		a.log.Info("connections from external plugins disabled")
	} else if err := a.listen(); err != nil {
		return err
	}
	builtins.Wait()
wait:
	for range launch {
		select {
		case o := <-outcomes:
			if o.err != nil {
				a.log.Error("pre-installed plugin failed to start", "plugin", o.full, "error", o.err)
			}
		case <-ctx.Done():
			break wait
		case <-a.ctx.Done():
			break wait
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("adaptation: starting plugins: %w", err)
	}
	return nil
}

// Stop shuts the Adaptation down: it stops accepting plugins, sends
// Shutdown to every plugin (bounded by ctx and the request timeout),
// disconnects them, terminates and reaps launched plugin processes, and
// waits for all of its goroutines. Events called after Stop are not
// delivered. Stop returns ctx's error if ctx ended before Shutdown was
// answered everywhere; the teardown is complete either way.
func (a *Adaptation) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		a.wg.Wait()
		return nil
	}
	a.stopped = true
	plugins := a.plugins
	a.plugins = nil
	l := a.listener
	a.mu.Unlock()

	a.log.Info("stopping NRI", "plugins", len(plugins))
	if l != nil {
		l.Close()
	}

	sctx, cancel := context.WithTimeout(ctx, a.cfg.limits.RequestTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.drainObserver(sctx)
			p.shutdown(sctx)
			p.disconnect("runtime stopped")
		}()
	}
	wg.Wait()
	err := ctx.Err()
	a.cancel()
	a.wg.Wait()
	a.connLogs.flush()
	if cerr := a.wasm.close(context.WithoutCancel(ctx)); cerr != nil {
		a.log.Warn("closing the WASM compilation cache", "error", cerr)
	}
	return err
}

// goOwned runs f in a goroutine counted in a.wg.
func (a *Adaptation) goOwned(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// sleep waits for d, or until the Adaptation stops (reporting false).
func (a *Adaptation) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a.ctx.Done():
		return false
	}
}

// PluginKind says how a plugin came to the Adaptation.
type PluginKind int

const (
	// KindBuiltin is an in-process plugin ([WithBuiltinPlugin]).
	KindBuiltin PluginKind = iota + 1
	// KindPreinstalled is a plugin launched from the plugin directory.
	KindPreinstalled
	// KindExternal is a plugin that connected on its own.
	KindExternal
	// KindWASM is a WebAssembly plugin loaded in-process from the plugin
	// directory.
	KindWASM
)

// String returns the kind's name, as used in logs ("builtin", ...).
func (k PluginKind) String() string {
	switch k {
	case KindBuiltin:
		return "builtin"
	case KindPreinstalled:
		return "pre-installed"
	case KindExternal:
		return "external"
	case KindWASM:
		return "wasm"
	}
	return fmt.Sprintf("PluginKind(%d)", int(k))
}

// PluginState is where a plugin is in its lifecycle.
type PluginState int

const (
	// StateRegistering: configured or being configured, not yet
	// synchronizing.
	StateRegistering PluginState = iota + 1
	// StateSynchronizing: receiving Synchronize; events are queued for
	// it.
	StateSynchronizing
	// StateActive: receiving events.
	StateActive
	// StateClosed: disconnected.
	StateClosed
)

// String returns the state's name, as used in logs.
func (s PluginState) String() string {
	switch s {
	case StateRegistering:
		return "registering"
	case StateSynchronizing:
		return "synchronizing"
	case StateActive:
		return "active"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("PluginState(%d)", int(s))
}

// PluginInfo describes one plugin, as reported by [Adaptation.Plugins].
type PluginInfo struct {
	// Name is the plugin's name, without index.
	Name string
	// Index is the plugin's two-digit index.
	Index string
	// Kind says how the plugin came to the Adaptation.
	Kind PluginKind
	// PID is the plugin's process ID, if known (0 for builtin plugins).
	PID int
	// Events are the events the plugin subscribed to.
	Events api.EventMask
	// State is the plugin's lifecycle state.
	State PluginState
	// RequestTimeout is the plugin's effective request timeout.
	RequestTimeout time.Duration
	// FailurePolicy is the plugin's effective failure policy.
	FailRequest, KeepConnected bool
	// Required is set if the administrator marked the plugin required.
	Required bool
	// Identity is who the plugin is, as the runtime can prove it
	// (package identity): a launched plugin's file, an external one's
	// process, executable, pod and container. It is not to be modified.
	Identity *identity.Identity
	// Scope is the plugin's effective scope (the administrator's and
	// its own), as filter.Filter.String renders it: "all" if the plugin
	// receives events about every pod and container.
	Scope string
	// Filtered counts the events the plugin subscribed to but was not
	// sent because their pod or container is outside its scope.
	Filtered uint64
	// OptedOut counts the events the plugin subscribed to but was not
	// sent because it opted out of their pod or container.
	OptedOut uint64
	// ObserveOnly is set for a plugin that declared it only observes: it
	// is sent its events without being waited for (see docs/protocol.md,
	// "Observe-only plugins").
	ObserveOnly bool
}

// FullName returns IDX-NAME.
func (i PluginInfo) FullName() string { return api.FullPluginName(i.Index, i.Name) }

// Plugins returns the plugins currently registered or registering, in
// invocation order.
func (a *Adaptation) Plugins() []PluginInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	all := make([]*plugin, 0, len(a.plugins)+len(a.admitting))
	all = append(all, a.plugins...)
	for _, p := range a.admitting {
		all = append(all, p)
	}
	slices.SortFunc(all, comparePlugins)
	infos := make([]PluginInfo, 0, len(all))
	for _, p := range all {
		infos = append(infos, PluginInfo{
			Name: p.name, Index: p.idx, Kind: p.kind, PID: p.pid, Events: p.events,
			State: p.state, RequestTimeout: p.timeout,
			FailRequest: p.policy.failRequest, KeepConnected: p.policy.keepConnected,
			Required: p.required, Scope: p.scope, Identity: p.id,
			Filtered: p.filtered.Load(), OptedOut: p.optedOut.Load(), ObserveOnly: p.observeOnly,
		})
	}
	return infos
}
