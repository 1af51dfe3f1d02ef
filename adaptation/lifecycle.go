package adaptation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/identity"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/internal/trustedfile"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// The lifecycle of a plugin, in one place. A plugin comes in one of four
// ways, each with its start function here:
//
//   - builtin ([WithBuiltinPlugin]): startBuiltin, on an endpoint that
//     calls its service in-process (builtin.go);
//   - launched (a process of the plugin directory): startLaunched starts
//     the process with one end of a socket pair (launch.go), then
//     startConn waits for it to register on that connection;
//   - external (a process that connected to the runtime's socket,
//     listen.go): ServeConn, through the same startConn;
//   - WASM (a module of the plugin directory): startWASM loads it
//     in-process (wasm.go, wasmload.go).
//
// From there every kind goes the same way: register admits the plugin
// (registry.go) and configures it (handshake.go), begin starts its worker
// and its watcher (run) and activates it (activate: it enters the
// registry and is sent Synchronize), and disconnect is the one way out.
// The plugins of the plugin directory are supervised (supervise): started
// again, with backoff, after they are gone, with [WithRestartLaunched].

// startBuiltin registers and synchronizes a builtin plugin.
func (a *Adaptation) startBuiltin(ctx context.Context, b builtinSpec) error {
	return a.startInProcess(ctx, newBuiltinEndpoint(b.svc), KindBuiltin, b.idx, b.name, identity.Launched(identity.Builtin, ""), "", nil)
}

// startInProcess registers and begins a plugin that runs in the runtime's
// process (builtin, WASM) on ep, which is closed if registration fails.
func (a *Adaptation) startInProcess(ctx context.Context, ep endpoint, kind PluginKind, idx, name string, id *identity.Identity, config string, logs *logBudget) error {
	p, rerr := a.register(ep, kind, idx, name, 0, id, config, logs)
	if rerr != nil {
		ep.Close()
		return rerr
	}
	return a.begin(ctx, p)
}

// supervise runs a pre-installed plugin: it launches (or loads) it and
// reports the outcome of the first registration to first; with
// WithRestartLaunched it launches it again, with backoff, each time it
// exits or is dropped.
func (a *Adaptation) supervise(l launchSpec, first func(error)) {
	var (
		rb       = a.cfg.restart
		backoff  time.Duration
		reported bool
	)
	if rb != nil {
		backoff = rb.Initial
	}
	l.logs = a.pluginLogBudget(l.full)
	for {
		started := time.Now()
		gone, err := a.startPreinstalled(l)
		if !reported {
			first(err)
			reported = true
		}
		if rb == nil {
			return
		}
		if isPermanent(err) {
			a.log.Error("not restarting pre-installed plugin", "plugin", l.full, "error", err)
			return
		}
		if gone != nil {
			select {
			case <-gone:
			case <-a.ctx.Done():
				return
			}
		}
		if time.Since(started) >= rb.Max {
			backoff = rb.Initial
		}
		a.log.Info("restarting pre-installed plugin", "plugin", l.full, "in", backoff)
		if !a.sleep(backoff) {
			return
		}
		backoff = min(2*backoff, rb.Max)
	}
}

// startPreinstalled runs l once, as a process or a WASM module; it returns
// once the plugin is synchronized or failed, with a channel closed once
// it is gone (nil if it never started).
func (a *Adaptation) startPreinstalled(l launchSpec) (<-chan struct{}, error) {
	if l.wasm {
		return a.startWASM(l)
	}
	proc, err := a.startLaunched(l)
	if proc == nil {
		return nil, err
	}
	return proc.reaped, err
}

// startLaunched starts the plugin's process and registers it; it returns
// once the plugin is synchronized or failed. The process is reaped when
// the plugin is disconnected.
func (a *Adaptation) startLaunched(l launchSpec) (*process, error) {
	// Checked again: a restart may come long after discover.
	if _, _, err := trustedfile.CheckPath(l.path); err != nil {
		return nil, fmt.Errorf("not launching plugin %q: %w", l.full, err)
	}
	proc, conn, err := a.launch(l)
	if err != nil {
		return nil, err
	}
	return proc, a.startConn(a.ctx, conn, KindPreinstalled, &l, proc)
}

// startWASM loads the WASM plugin l, registers and synchronizes it. It
// returns a channel closed once the plugin is gone; loading happens
// outside the registry lock, so other plugins and events go on meanwhile.
func (a *Adaptation) startWASM(l launchSpec) (<-chan struct{}, error) {
	cache, err := a.wasm.get(a.cfg.wasmCacheDir, a.log)
	if err != nil {
		err = fmt.Errorf("WASM plugin %q not loaded: %w", l.full, err)
		if errors.Is(err, wasmhost.ErrDisabled) {
			err = permanentError{err}
		}
		return nil, err
	}
	ep := &wasmEndpoint{done: make(chan struct{}), grace: a.cfg.limits.TerminationGrace}
	mod, unreserve, err := a.loadWASM(l, wasmhost.Options{
		Name:             l.full,
		Logger:           l.logs.logger(a.log.Handler()),
		Cache:            cache,
		MemoryLimitPages: a.cfg.limits.wasmMemoryPages(),
		Reinit:           ep.reinit,
		MaxModuleSize:    a.cfg.limits.MaxWASMModuleSize,
		TrustedFile:      true,
		MaxAnswerSize:    a.cfg.limits.MaxAnswerSize,
		MaxMessageSize:   MaxMessageSize,
		FuelChecks:       !a.cfg.wasmCtxChecks,
	})
	if err != nil {
		var (
			exports *wasmhost.ExportError
			version *wasmhost.VersionError
		)
		permanent := errors.Is(err, wasmhost.ErrDisabled) || errors.As(err, &exports) || errors.As(err, &version)
		err = fmt.Errorf("WASM plugin %q not loaded: %w", l.full, err)
		if permanent {
			err = permanentError{err}
		}
		return nil, err
	}
	ep.mod, ep.Client, ep.unreserve = mod, wasmhost.NewClient(mod), unreserve
	// ep is closed if registration fails: its Done is closed then too.
	return ep.Done(), a.startInProcess(a.ctx, ep, KindWASM, l.idx, l.name, identity.Launched(identity.WASM, l.path), l.config, l.logs)
}

// ServeConn runs the registration of a plugin connecting on conn (as
// Start's listener does for each connection on the socket) and returns
// once the plugin is synchronized, with nil, or has failed, with the
// reason (a *RegistrationError if registration was refused; the plugin
// got the same message). ctx bounds the wait, not the plugin's life: a
// registered plugin is served until it disconnects or the Adaptation
// stops. ServeConn takes ownership of conn.
func (a *Adaptation) ServeConn(ctx context.Context, conn net.Conn) error {
	return a.startConn(ctx, conn, KindExternal, nil, nil)
}

// startConn starts a plugin on the other end of conn: an external one,
// or a launched one (l and proc set). It sets the connection up
// (newConnEndpoint, conn.go), waits for the plugin to register
// (handshake.go), and begins it. The process is terminated and reaped
// whenever the connection is closed, whatever happens.
func (a *Adaptation) startConn(ctx context.Context, conn net.Conn, kind PluginKind, l *launchSpec, proc *process) error {
	pid := 0
	var peer *identity.Peer // an external plugin's, if known
	if proc != nil {
		pid = proc.pid()
	} else if p, err := identity.Capture(conn); err == nil {
		pid, peer = p.PID, p
		// Its pidfd is needed until the plugin's identity is derived
		// (session.register), at most until the registration ends.
		defer peer.Close()
	}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		conn.Close()
		if proc != nil {
			proc.terminate()
		}
		return ErrStopped
	}
	if kind == KindExternal {
		if r := a.admitConnLocked(peer); r != nil {
			a.mu.Unlock()
			conn.Close()
			a.connLog.Warn(r.msg, r.args...)
			return r.err
		}
	}
	a.wg.Add(1)
	// registered ends the connection's count as not registered yet.
	registered := func() {}
	if kind == KindExternal {
		registered = sync.OnceFunc(func() {
			a.mu.Lock()
			a.leaveConnLocked(peer)
			a.mu.Unlock()
		})
	}
	a.mu.Unlock()
	defer a.wg.Done()
	defer registered()

	s := &session{a: a, kind: kind, launch: l, proc: proc, pid: pid, peer: peer, arrived: make(chan struct{}), decided: make(chan struct{}),
		decoding: make(chan struct{}, 1)}
	var onClose func() error
	if proc != nil {
		onClose = proc.terminate
	}
	// The bounds on what the plugin's messages hold come last, next to
	// the decoding they guard (bounds.go).
	lim := connLimits{writeTimeout: a.cfg.limits.RegistrationTimeout, maxInFlight: a.cfg.limits.MaxInFlightUpdates,
		clientOpts: append(slices.Clip(a.cfg.clientOpts), ttrpc.WithChainUnaryClientInterceptor(boundAnswers(a.cfg.limits.MaxAnswerSize))),
		serverOpts: append(slices.Clip(a.cfg.serverOpts), ttrpc.WithChainUnaryServerInterceptor(s.boundRequests)),
		violated: func(err error) {
			a.log.Warn("closing plugin connection: the plugin broke a bound", "plugin", s.who(), "error", err)
		}}
	ep, err := newConnEndpoint(a.ctx, conn, lim, func(e *connEndpoint) api.RuntimeService { s.ep = e; return s }, onClose)
	if err != nil {
		// A connection that ended before it was set up (the plugin
		// closed it at once, or sent garbage) is described as the same
		// end after the set-up is (how the plugin exited, its output),
		// before the process is terminated.
		if errors.Is(err, nriconn.ErrEnded) {
			err = s.endedEarly(err, false)
		} else {
			err = fmt.Errorf("plugin connection (pid %d) failed: %w", pid, err)
		}
		if proc != nil {
			proc.terminate()
		}
		a.registrationLog(kind).Error("plugin registration failed", "kind", kind.String(), "pid", pid, "error", err)
		return err
	}
	err = s.await(ctx)
	registered()
	if err != nil {
		if s.abandon() {
			err = fmt.Errorf("%w (the plugin was admitted as %q, now dropped)", err, s.p.full)
		}
		a.registrationLog(kind).Error("plugin registration failed", "kind", kind.String(), "pid", pid, "error", err)
		ep.waitFlushed(answerGrace)
		if s.answered() {
			// ttrpc's client may report "ttrpc: closed" instead of an
			// answer that arrived just before the connection closed (its
			// dispatch picks between the two at random), so let the
			// plugin read the refusal and hang up first.
			ep.waitPeerClose(answerGrace)
		}
		ep.Close()
		return err
	}
	ep.waitFlushed(answerGrace)
	return a.begin(ctx, s.p)
}

// register admits and configures a plugin that announced itself as
// idx-name over ep and is id; its log records are within logs (nil: a new
// budget).
func (a *Adaptation) register(ep endpoint, kind PluginKind, idx, name string, pid int, id *identity.Identity, config string, logs *logBudget) (*plugin, *RegistrationError) {
	p := newPlugin(a, kind, idx, name, ep, pid, id, logs)
	if rerr := a.admit(p); rerr != nil {
		return nil, rerr
	}
	if kind == KindExternal {
		p.setLogs(a.externalLogBudget(p.full))
	}
	if rerr := a.configure(p, config); rerr != nil {
		a.unadmit(p)
		return nil, rerr
	}
	return p, nil
}

// begin starts a registered plugin's worker and watcher (run) and
// activates it; it returns once the plugin is synchronized, or failed to,
// or ctx ends.
func (a *Adaptation) begin(ctx context.Context, p *plugin) error {
	p.run()
	return a.activate(ctx, p)
}

// run starts the plugin's worker and connection watcher.
func (p *plugin) run() {
	p.a.goOwned(p.worker)
	p.a.goOwned(func() {
		select {
		case <-p.ep.Done():
			p.disconnect("connection lost")
		case <-p.closed:
		}
	})
}

// activate makes a configured plugin receive events: in one critical
// section (see withSnapshot) it inserts the plugin as synchronizing
// (replacing an external plugin of the same name), and takes the
// runtime's snapshot; the plugin's worker then sends Synchronize before
// any event. activate returns when the plugin is synchronized, or failed
// to, or ctx ends.
func (a *Adaptation) activate(ctx context.Context, p *plugin) error {
	done := make(chan error, 1)
	var old *plugin
	err := a.withSnapshot(p, func(pods []*api.PodSandbox, ctrs []*api.Container) error {
		if a.stopped {
			return ErrStopped
		}
		if p.state == StateClosed {
			return errPluginGone
		}
		a.leaveAdmittingLocked(p)
		// Only the objects in the plugin's scope are sent, and recorded.
		pods, ctrs = p.track.seed(pods, ctrs)
		old = a.findLocked(p.full)
		if old != nil {
			i := slices.Index(a.plugins, old)
			a.plugins = slices.Delete(a.plugins, i, i+1)
		}
		p.state = StateSynchronizing
		i, _ := slices.BinarySearchFunc(a.plugins, p, comparePlugins)
		a.plugins = slices.Insert(a.plugins, i, p)
		a.metrics.setPlugins(len(a.plugins))
		// The queue is empty: this is the plugin's first work. It cannot
		// be closed: disconnect takes a.mu before closing it.
		p.enqueue(func(skip error) {
			if skip != nil {
				done <- skip
				return
			}
			err := a.synchronize(p, pods, ctrs)
			if err != nil {
				p.disconnect("synchronization failed: " + err.Error())
			} else {
				a.mu.Lock()
				if p.state == StateSynchronizing {
					p.state = StateActive
				}
				a.mu.Unlock()
				a.log.Info("plugin synchronized", "plugin", p.full, "kind", p.kind.String(),
					"events", p.events.String(), "pods", len(pods), "containers", len(ctrs))
			}
			done <- err
		})
		return nil
	})
	switch {
	case errors.Is(err, ErrStopped):
		// Stop did not see the plugin (it was not in the registry yet):
		// its worker and watcher run, so disconnect it here.
		p.disconnect("runtime stopped")
		return ErrStopped
	case errors.Is(err, errPluginGone):
		return errPluginGone
	case err != nil:
		// Listing failed, or the runtime's blocks or SyncFunc did.
		a.mu.Lock()
		a.leaveAdmittingLocked(p)
		a.mu.Unlock()
		p.disconnect(err.Error())
		return err
	}

	if old != nil {
		a.log.Info("plugin replaced by a new connection", "plugin", p.full)
		old.retire()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// disconnect removes the plugin from the registry, fails its queued work
// and closes its endpoint. It is idempotent.
func (p *plugin) disconnect(reason string) {
	p.closeOnce.Do(func() {
		p.a.forget(p)
		close(p.closed)
		p.q.Close()
		p.a.log.Info("plugin disconnected", "plugin", p.full, "kind", p.kind.String(), "reason", reason)
		p.a.goOwned(func() {
			if err := p.ep.Close(); err != nil {
				p.a.log.Warn("closing plugin", "plugin", p.full, "error", err)
			}
			// Its output, if any, is drained: say what was not logged.
			p.logs.flush()
		})
	})
}

// shutdown sends Shutdown to the plugin, logging a failure.
func (p *plugin) shutdown(ctx context.Context) {
	if p.isGone() {
		return
	}
	if _, err := p.ep.Shutdown(ctx, &api.ShutdownRequest{}); err != nil {
		p.a.log.Debug("plugin did not acknowledge Shutdown", "plugin", p.full, "error", err)
	}
}

// retire hands the plugin over to its replacement: the events already
// queued for it finish, then it is sent Shutdown and disconnected.
func (p *plugin) retire() {
	ok := p.enqueue(func(skip error) {
		if skip == nil {
			ctx, cancel := context.WithTimeout(p.a.ctx, DefaultShutdownTimeout)
			p.shutdown(ctx)
			cancel()
		}
		p.disconnect("replaced by a new connection")
	})
	if !ok {
		p.disconnect("replaced by a new connection")
	}
}
