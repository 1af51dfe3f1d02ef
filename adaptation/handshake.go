package adaptation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/identity"
	"github.com/nrikit/nrikit/internal/pluginproc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The handshake of a plugin: the Runtime service of its connection
// (session: RegisterPlugin, then the plugin's own UpdateContainers), and
// configure, which every kind of plugin goes through once admitted (see
// lifecycle.go).

// answerGrace bounds the wait for a RegisterPlugin answer to be written
// before the connection of a refused plugin is closed.
const answerGrace = time.Second

// registrationLog is the logger of the registration of a plugin of kind:
// for an external one, the budget of the connections that have not
// registered bounds its records (any local process can connect).
func (a *Adaptation) registrationLog(kind PluginKind) *slog.Logger {
	if kind == KindExternal {
		return a.connLog
	}
	return a.log
}

// clipLength is how much of a string a peer chose clip keeps.
const clipLength = 64

// clip shortens a string a peer chose (a name before it is checked, a
// version) for logs and errors, saying how long it was.
func clip(s string) string {
	if len(s) <= clipLength {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:clipLength], ""), len(s))
}

// session is the Runtime service of one connection.
type session struct {
	a      *Adaptation
	ep     *connEndpoint
	kind   PluginKind
	launch *launchSpec
	proc   *process // the launched plugin's process; nil for others
	pid    int
	// peer is an external plugin's process as the connection's
	// credentials give it (nil if unknown), from which its identity is
	// derived when it registers.
	peer *identity.Peer

	once    sync.Once
	arrived chan struct{} // closed when RegisterPlugin arrives
	decided chan struct{} // closed when it was answered; p or err is set
	p       *plugin
	err     *RegistrationError
	// decoding is held by the UpdateContainers request being decoded and
	// handled (see boundRequests).
	decoding chan struct{}
}

// await waits for the plugin's registration to be decided.
func (s *session) await(ctx context.Context) error {
	t := time.NewTimer(s.a.cfg.limits.RegistrationTimeout)
	defer t.Stop()
	select {
	case <-s.arrived:
	case <-t.C:
		return fmt.Errorf("plugin (pid %d) did not register within %v", s.pid, s.a.cfg.limits.RegistrationTimeout)
	case <-s.ep.Done():
		return s.disconnected()
	case <-ctx.Done():
		return ctx.Err()
	case <-s.a.ctx.Done():
		return ErrStopped
	}
	<-s.decided // the handler is bounded by the registration timeout
	if s.err != nil {
		return s.err
	}
	return nil
}

// exitWait bounds how long a launched plugin whose connection closed
// before it registered is given to exit, so that the registration error
// can say how it ended: a plugin that quits closes its socket as it exits.
const exitWait = time.Second

// disconnected describes a connection that ended before the plugin
// registered: the protocol violation that made the runtime close it, or
// how a launched plugin ended, with its last output ("plugin (pid 7)
// exited with status 0 before registering; output: I quit").
func (s *session) disconnected() error {
	return s.endedEarly(s.ep.cause(), s.ep.violation.Load() != nil)
}

// endedEarly is disconnected for a connection that ended with cause;
// violated tells that the runtime closed it for breaking a bound. It also
// describes a connection the plugin closed before the runtime had set it
// up (a plugin that quits at once may close its socket before the
// runtime's multiplexer has opened its logical connections): the same
// close a moment later gets the same reason.
func (s *session) endedEarly(cause error, violated bool) error {
	if violated || !peerClosed(cause) {
		// The runtime closed the connection: the reason is its own.
		return fmt.Errorf("plugin (pid %d) disconnected before registering: %w", s.pid, cause)
	}
	if p := s.proc; p != nil && p.proc.WaitExit(exitWait, s.a.ctx.Done()) {
		<-p.proc.Done() // the output drained, bounded by the output grace
		return &earlyExit{pid: s.pid, how: pluginproc.ExitDescription(p.proc.Err()), output: p.proc.Output(), cause: cause}
	}
	return &earlyExit{pid: s.pid, how: "closed its connection", cause: cause}
}

// peerClosed reports whether a connection ended because the plugin closed
// it (or its process ended), rather than because the runtime found a
// fault in what it sent.
func peerClosed(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// earlyExit is the registration error of a plugin whose connection ended
// before it registered. The transport's own error (cause) is kept for
// errors.Is but not shown: what the plugin did is the reason.
type earlyExit struct {
	pid    int
	how    string // "exited with status 0", "closed its connection"
	output string // the launched plugin's output, summarised
	cause  error
}

func (e *earlyExit) Error() string {
	msg := fmt.Sprintf("plugin (pid %d) %s before registering", e.pid, e.how)
	if e.output != "" {
		msg += "; output: " + e.output
	}
	return msg
}

func (e *earlyExit) Unwrap() error { return e.cause }

// abandon cleans up after a registration that await gave up on (the
// connection closed, or ctx ended, while RegisterPlugin was handled): it
// waits for the handler, bounded by the registration timeout like the
// handler itself, and drops the plugin the handler admitted, which would
// otherwise keep its name taken. It reports whether there was one.
func (s *session) abandon() bool {
	select {
	case <-s.arrived:
	default:
		return false
	}
	<-s.decided
	if s.p == nil {
		return false
	}
	s.a.unadmit(s.p)
	return true
}

// answered reports whether RegisterPlugin was answered.
func (s *session) answered() bool {
	select {
	case <-s.decided:
		return true
	default:
		return false
	}
}

// RegisterPlugin is step 3 of the handshake: the answer is sent only once
// the plugin is configured.
func (s *session) RegisterPlugin(_ context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	first := false
	s.once.Do(func() { first = true; close(s.arrived) })
	if !first {
		return nil, status.Errorf(codes.FailedPrecondition, "plugin %q already sent RegisterPlugin",
			api.FullPluginName(req.PluginIdx, req.PluginName))
	}
	defer close(s.decided)
	s.ep.armFlush()
	p, err := s.register(req)
	if err != nil {
		s.err = err
		return nil, err
	}
	s.p = p
	return &api.Empty{}, nil
}

// register checks the name and index the plugin registered with (a
// pre-installed plugin's must be those it was started with) and
// registers it.
func (s *session) register(req *api.RegisterPluginRequest) (*plugin, *RegistrationError) {
	idx, name := req.GetPluginIdx(), req.GetPluginName()
	// Until both are checked, the name is the peer's to choose: clip it.
	full := clip(api.FullPluginName(idx, name))
	if err := api.CheckPluginName(name); err != nil {
		return nil, registrationError(full, codes.InvalidArgument, err, "plugin registered with an invalid name: %v", err)
	}
	if err := api.CheckPluginIndex(idx); err != nil {
		return nil, registrationError(full, codes.InvalidArgument, err, "plugin %q registered with an invalid index: %v", name, err)
	}
	full = api.FullPluginName(idx, name)
	config := ""
	var (
		logs *logBudget
		id   *identity.Identity
	)
	if l := s.launch; l != nil {
		if idx != l.idx || name != l.name {
			return nil, registrationError(full, codes.InvalidArgument, nil,
				"plugin %q registered as %q; a pre-installed plugin must use the name and index it was started with", l.full, full)
		}
		config, logs = l.config, l.logs
		id = identity.Launched(identity.PreInstalled, l.path)
	} else {
		id = s.a.identify(full, s.peer)
	}
	s.a.registrationLog(s.kind).Info("plugin registering", "plugin", full, "kind", s.kind.String(), "pid", s.pid,
		"identity", id.String(), "nri_version", clip(req.GetNRIVersion()))
	return s.a.register(s.ep, s.kind, idx, name, s.pid, id, config, logs)
}

// UpdateContainers relays a plugin's unsolicited updates to the runtime,
// one call at a time per plugin.
func (s *session) UpdateContainers(ctx context.Context, req *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	select {
	case <-s.decided:
	default:
		return nil, status.Error(codes.FailedPrecondition, "UpdateContainers before registration")
	}
	p := s.p
	if p == nil {
		return nil, status.Error(codes.FailedPrecondition, "UpdateContainers from an unregistered plugin")
	}
	return p.updateContainers(ctx, req)
}

// updateContainers passes a plugin's unsolicited updates and evictions to
// the runtime's UpdateFunc. Updates of containers outside the plugin's
// scope, and updates its grant does not allow, are not applied and come
// back as failed; an eviction of a container outside its scope, or one
// its grant does not allow, refuses the whole request (nothing is
// applied). After a policy reload changed the plugin's where, the
// containers are looked up in the runtime's list and checked against it
// (whereLookup).
func (p *plugin) updateContainers(ctx context.Context, req *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	p.updates.Lock()
	defer p.updates.Unlock()
	ctx, cancel := p.a.detach(ctx)
	defer cancel()
	p.log.Info("plugin requested container updates", "updates", len(req.GetUpdate()), "evictions", len(req.GetEvict()))
	if p.observeOnly && len(req.GetEvict()) > 0 {
		return nil, status.Error(codes.PermissionDenied, "an observe-only plugin evicts nothing")
	}
	if serr := p.refusedEviction(req.GetEvict()); serr != nil {
		p.log.Warn("refusing plugin's container updates", "error", serr)
		return nil, status.Error(codes.InvalidArgument, serr.Error())
	}
	byID, err := p.whereLookup()
	if err != nil {
		p.log.Warn("refusing plugin's container updates", "error", err)
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	if derr := p.deniedEviction(req.GetEvict(), byID); derr != nil {
		return nil, status.Error(codes.PermissionDenied, derr.Error())
	}
	updates, refused := p.splitUpdates(req.GetUpdate())
	updates, denied := p.deniedUpdates("UpdateContainers", updates, byID)
	refused = append(refused, denied...)
	if len(updates) == 0 && len(req.GetEvict()) == 0 {
		return &api.UpdateContainersResponse{Failed: refused}, nil
	}
	failed, err := p.a.update(ctx, updates, req.GetEvict())
	failed = append(refused, failed...)
	if err != nil {
		return &api.UpdateContainersResponse{Failed: failed}, updateFailure(failed, err)
	}
	return &api.UpdateContainersResponse{Failed: failed}, nil
}

// configure sends Configure and checks the plugin's answer.
func (a *Adaptation) configure(p *plugin, config string) *RegistrationError {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.limits.RegistrationTimeout)
	defer cancel()
	// The capabilities told are within the plugin's grant: resolve it
	// under the policy in force now (again below, with its where, in
	// case the policy was reloaded during Configure).
	a.mu.Lock()
	p.resolveGrant(a.pol.Load())
	a.mu.Unlock()
	told := p.toldCapabilities()
	req := &api.ConfigureRequest{
		Config:              config,
		RuntimeName:         a.name,
		RuntimeVersion:      a.version,
		RegistrationTimeout: a.cfg.limits.RegistrationTimeout.Milliseconds(),
		RequestTimeout:      a.cfg.limits.RequestTimeout.Milliseconds(),
		NRIVersion:          api.NRIVersion,
		SupportedEvents:     int32(a.cfg.supported),
		MaxRequestTimeout:   a.cfg.limits.MaxPluginRequestTimeout.Milliseconds(),
		SynchronizeTimeout:  a.cfg.limits.SynchronizeTimeout.Milliseconds(),
		Capabilities:        capabilitySet(told),
	}
	start := time.Now()
	rsp, err := p.ep.Configure(ctx, req)
	kind := a.classifyErr(p, ctx, err)
	p.observe("Configure", time.Since(start), kind)
	if err != nil {
		switch {
		case a.ctx.Err() != nil:
			return registrationError(p.full, codes.Unavailable, ErrStopped, "runtime is shutting down")
		case kind == FailureTimeout:
			return registrationError(p.full, codes.DeadlineExceeded, err,
				"plugin %q did not answer Configure within %v", p.full, a.cfg.limits.RegistrationTimeout)
		case kind == FailureLost:
			return registrationError(p.full, codes.Unavailable, err, "plugin %q was lost during Configure: %v", p.full, err)
		case kind == FailureCrashed:
			return registrationError(p.full, codes.Internal, err, "plugin %q crashed during Configure: %v", p.full, err)
		case kind == FailureOversize:
			err = bounded(kind, err)
			return registrationError(p.full, codes.ResourceExhausted, err, "plugin %q failed Configure: %v", p.full, err)
		}
		return registrationError(p.full, codes.FailedPrecondition, err,
			"plugin %q rejected its configuration: %s", p.full, errorMessage(err))
	}

	events := api.EventMask(rsp.GetEvents())
	if events == 0 {
		events = a.cfg.supported
	}
	if u := events.Unknown(); u != 0 {
		return registrationError(p.full, codes.InvalidArgument, nil,
			"plugin %q subscribed to unknown events 0x%x", p.full, uint32(u))
	}
	if extra := events &^ a.cfg.supported; extra != 0 {
		return registrationError(p.full, codes.FailedPrecondition, nil,
			"plugin %q subscribed to events this runtime does not support: %s (0x%x); supported: %s",
			p.full, extra, uint32(extra), a.cfg.supported)
	}
	if rerr := checkRequiredCapabilities(p.full, told, rsp.GetRequiredCapabilities()); rerr != nil {
		return rerr
	}
	fp := rsp.GetFailurePolicy()
	if ov := a.cfg.overrides[p.full].FailurePolicy; ov != nil {
		fp = ov
	}
	own, err := a.cfg.compileScope(rsp.GetScope(), filter.WithLogger(p.log))
	if err != nil {
		return registrationError(p.full, codes.InvalidArgument, err,
			"plugin %q declared an invalid scope: %s", p.full, scopeMessage(err))
	}
	asked := time.Duration(rsp.GetRequestTimeout()) * time.Millisecond
	timeout := a.effectiveTimeout(asked)
	if asked > timeout {
		a.log.Warn("plugin asked for a request timeout above the maximum", "plugin", p.full,
			"asked", asked, "granted", timeout)
	}
	// From now on a write the plugin does not take in within its
	// request timeout disconnects it, and it may send large messages.
	p.ep.configured(timeout)
	// Plugins() reads these of registering plugins under a.mu.
	a.mu.Lock()
	// The grant under the policy in force (applyPolicy resolves it
	// again under a.mu): its where confines the plugin's scope.
	p.trackedWhere = ""
	p.resolveGrant(a.pol.Load())
	var where *filter.Filter
	if gs := p.grant.Load(); gs != nil {
		where = gs.where
		p.trackedWhere = where.String()
		p.grant.Store(&grantState{grant: gs.grant, where: gs.where, unbound: gs.unbound})
	}
	scope := filter.And(a.cfg.adminScopes[p.full], own, where)
	p.events = events
	p.policy = failurePolicy{failRequest: fp.GetFailRequest(), keepConnected: fp.GetKeepConnected()}
	p.timeout = timeout
	p.track = newTracker(scope)
	p.scope = scope.String()
	p.skips = a.metrics.skipCounter(p.full, events)
	p.observeOnly = rsp.GetObserveOnly()
	if p.required {
		a.lastScopes[p.full] = scope
	}
	a.mu.Unlock()
	a.log.Info("plugin configured", "plugin", p.full, "events", events.String(), "request_timeout", p.timeout,
		"fail_request", p.policy.failRequest, "keep_connected", p.policy.keepConnected, "scope", p.scope,
		"grant", p.currentGrant().String(), "capabilities", told.String())
	a.warnNamedWithoutExtension(p)
	return nil
}

// warnNamedWithoutExtension logs the grants and required entries of the
// policy in force that name p without the extension of its file name
// (policy.NamedWithoutExtension): a WASM plugin 50-batchenv.wasm is
// batchenv.wasm, and a grant for batchenv silently is not its.
func (a *Adaptation) warnNamedWithoutExtension(p *plugin) {
	if names := a.pol.Load().NamedWithoutExtension(p.idx, p.name); len(names) > 0 {
		a.log.Warn("the policy names the plugin without the extension of its file name, so those entries are not its: "+
			"a plugin is named after its file, extension included", "plugin", p.full, "entries", names,
			"grant", p.currentGrant().String())
	}
}
