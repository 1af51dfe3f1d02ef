package adaptation

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/identity"
	"google.golang.org/protobuf/proto"
)

// endpoint is how the Adaptation reaches a plugin. Every kind of plugin
// implements it: launched and external plugins with the ttrpc client of
// their connection (see connEndpoint), builtin plugins with their
// in-process service (see builtinEndpoint), WASM plugins with their
// module (see wasmEndpoint). How a request travels is the
// endpoint's decision; everything else (ordering, timeouts, failure
// handling, metrics) is the same for all kinds.
type endpoint interface {
	// PluginService makes the calls of the plugin's lifecycle
	// (Configure, Synchronize, Shutdown) with requests made for the
	// plugin alone.
	api.PluginService
	// call makes the call m of an event with req, the request itself,
	// which the endpoint must not modify and may share with other
	// endpoints: a connection encodes it, sharing with the other
	// connections of the event what sh holds (sh may be nil), an
	// in-process plugin gets a clone. It returns the answer, of m's
	// answer type.
	call(ctx context.Context, m *method, req proto.Message, sh *wire.Shared) (proto.Message, error)
	// failure classifies err, which a call returned and which is neither
	// a timeout nor a lost connection: FailureRejected if it is the
	// plugin's answer, FailureLost if the plugin sent something that
	// could not be decoded, FailureCrashed if the plugin crashed.
	failure(err error) FailureKind
	// syncParts returns the Synchronize requests of a snapshot, split to
	// fit limit bytes each (see wire.SplitSync), as the endpoint sends them.
	syncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *wire.SyncParts
	// Done is closed once the plugin is gone: its connection was lost,
	// its process exited, or Close was called.
	Done() <-chan struct{}
	// Close disconnects the plugin and releases what it holds; for a
	// launched plugin it also terminates and reaps the process. It is
	// idempotent and safe for concurrent use.
	Close() error
	// configured is called once the plugin is configured with its
	// request timeout: from then on a plugin that does not take in a
	// message within it is disconnected, and the plugin may send messages
	// of any size NRI allows (nothing to do for builtin plugins).
	configured(requestTimeout time.Duration)
}

// failurePolicy is a plugin's effective FailurePolicy.
type failurePolicy struct {
	failRequest, keepConnected bool
}

// plugin is one registered (or registering) plugin.
type plugin struct {
	a         *Adaptation
	idx, name string
	full      string
	kind      PluginKind
	ep        endpoint
	pid       int
	// id is who the plugin is (package identity), as the runtime can
	// prove it: the name is only what it registered with.
	id *identity.Identity
	// log is for the records the plugin causes, within its budget logs
	// (logbound.go), with plugin=IDX-NAME.
	log  *slog.Logger
	logs *logBudget

	// Set while the plugin is configured, read-only afterwards.
	events   api.EventMask
	policy   failurePolicy
	required bool
	timeout  time.Duration
	// observeOnly is set for a plugin that declared it only observes
	// (observeonly.go): it is never waited for and its answers are not
	// used.
	observeOnly bool

	// track is the plugin's scope and opt-out state (scope.go); set
	// while the plugin is configured.
	track *tracker
	// scope renders the effective scope, for logs and PluginInfo.
	scope string
	// grant is the plugin's grant under the policy in force (grant.go);
	// nil: no policy. trackedWhere renders the where track was made
	// with (set with track, under a.mu).
	grant        atomic.Pointer[grantState]
	trackedWhere string
	// filtered and optedOut count the events not delivered because of
	// the scope and of opt-outs; skips counts them for the recorder
	// (nil: not counted).
	filtered, optedOut atomic.Uint64
	skips              SkipCounter

	// legacy records the events the plugin does not implement a
	// dedicated RPC for, so they go straight to StateChange.
	legacy [api.Event_LAST]atomic.Bool
	// updates serialises the plugin's unsolicited UpdateContainers.
	updates sync.Mutex
	// pm is the plugin's hold on what its recorder keeps (metrics.go).
	pm pluginMetrics
	// unadmitted is closed when the plugin leaves a.admitting (see
	// admit); unadmitOnce closes it.
	unadmitted  chan struct{}
	unadmitOnce sync.Once

	q     *queue.Queue
	catch *queue.CatchUp // owned by the worker

	closed    chan struct{}
	closeOnce sync.Once

	// state is guarded by a.mu.
	state PluginState
}

// newPlugin returns a plugin whose log records are within logs (a new
// budget if nil).
func newPlugin(a *Adaptation, kind PluginKind, idx, name string, ep endpoint, pid int, id *identity.Identity, logs *logBudget) *plugin {
	full := api.FullPluginName(idx, name)
	ov := a.cfg.overrides[full]
	if logs == nil {
		logs = a.pluginLogBudget(full)
	}
	p := &plugin{
		a: a, idx: idx, name: name, full: full, kind: kind, ep: ep, pid: pid, id: id,
		required:   ov.Required,
		timeout:    a.cfg.limits.RequestTimeout,
		track:      newTracker(nil),
		scope:      "all",
		q:          queue.New(),
		closed:     make(chan struct{}),
		unadmitted: make(chan struct{}),
		state:      StateRegistering,
	}
	p.setLogs(logs)
	return p
}

// setLogs makes logs the plugin's log budget; it is called before the
// plugin is configured.
func (p *plugin) setLogs(logs *logBudget) {
	p.log, p.logs = logs.logger(p.a.log.Handler()).With("plugin", p.full), logs
}

// comparePlugins orders plugins for invocation: by index, then name.
func comparePlugins(x, y *plugin) int {
	if c := cmp.Compare(x.idx, y.idx); c != 0 {
		return c
	}
	return cmp.Compare(x.name, y.name)
}

// subscribed reports whether the plugin receives e.
func (p *plugin) subscribed(e api.Event) bool { return p.events.IsSet(e) }

// isGone reports whether the plugin was disconnected.
func (p *plugin) isGone() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// worker runs the plugin's queue until it is closed and drained; then
// the plugin calls no more, and its metrics go. Every call to the plugin,
// except registration and Shutdown at Stop, runs here or on the
// dispatcher the worker lent its turn to, in the order the calls were
// reserved (package queue).
func (p *plugin) worker() {
	defer p.a.dropMetrics(p)
	for {
		s := p.q.Next()
		if s == nil {
			return
		}
		if !s.CatchUp() {
			// Catching up is over: later slots do not catch up either.
			p.catch = nil
			p.offer(s)
			continue
		}
		w := s.Await()
		if w == nil {
			continue
		}
		switch {
		case p.isGone():
			w(errPluginGone)
		case s.CatchUp() && p.catch != nil && !p.catch.Admit(s):
			p.a.log.Debug("event filtered for a plugin that synchronized", "plugin", p.full,
				"event", s.Event().Name(), "pod", s.PodID(), "container", s.ContainerID())
			w(errFiltered)
		case s.Event() != api.Event_UNKNOWN && p.track.optedOutOf(s.PodID(), s.ContainerID()):
			// Queued before the plugin opted out.
			p.skipped(s.Event(), optedOut)
			w(errOptedOut)
		default:
			if !s.CatchUp() {
				p.catch = nil // catching up is over
			}
			w(nil)
		}
	}
}

// offer delivers a slot that is not catching up: it decides whether the
// event is skipped, offers the turn to the slot's dispatcher (see
// queue.Slot.TakeTurn) and waits until the work has run, there or, if the
// slot was filled instead, here.
func (p *plugin) offer(s *queue.Slot) {
	skip := p.verdict(s)
	if w, taken := s.Offer(skip); !taken {
		if w == nil {
			return
		}
		if skip == nil && p.isGone() {
			skip = errPluginGone
		}
		w(skip)
	}
	if skip == errOptedOut {
		p.skipped(s.Event(), optedOut)
	}
}

// verdict says why the event of s, which is not catching up, is not
// delivered (nil: it is).
func (p *plugin) verdict(s *queue.Slot) error {
	switch {
	case p.isGone():
		return errPluginGone
	case s.Event() != api.Event_UNKNOWN && p.track.optedOutOf(s.PodID(), s.ContainerID()):
		return errOptedOut // queued before the plugin opted out
	}
	return nil
}

// enqueue pushes a slot filled with w; it reports false if the plugin is
// gone (w is not called then).
func (p *plugin) enqueue(w queue.Work) bool {
	s := queue.NewSlot(api.Event_UNKNOWN, "", "", false)
	s.Fill(w)
	return p.q.Push(s, false)
}

// effectiveTimeout returns the request timeout the plugin gets when it
// asks for requested (0: none).
func (a *Adaptation) effectiveTimeout(requested time.Duration) time.Duration {
	if requested <= 0 {
		return a.cfg.limits.RequestTimeout
	}
	return min(requested, a.cfg.limits.MaxPluginRequestTimeout)
}
