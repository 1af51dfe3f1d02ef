package stub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/nrikit/nrikit/api"
)

// Stub connects a plugin to a runtime and dispatches the runtime's
// requests to the plugin's handlers. Its methods are safe for concurrent
// use.
type Stub struct {
	c  *core
	id identity

	mu   sync.Mutex
	life *lifetime
	sess *session // current connection, nil while disconnected
	// observing says the observer (WithObserver) is started.
	observing bool
	connUsed  bool // the given or inherited connection was used
}

// lifetime is one run of a stub, from Start until it stops.
type lifetime struct {
	stopC    chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	err      error       // why it stopped; set before done is closed
	inHook   atomic.Bool // the OnClose hook is running
}

func newLifetime() *lifetime {
	return &lifetime{stopC: make(chan struct{}), done: make(chan struct{})}
}

func (l *lifetime) stop() { l.stopOnce.Do(func() { close(l.stopC) }) }

func (l *lifetime) finish(err error) {
	l.err = err
	close(l.done)
}

func (l *lifetime) finished() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// New creates a stub for plugin, which must implement at least one event
// handler interface (such as [handler.CreateContainerInterface]). The plugin's
// identity is determined here; see the package documentation.
func New(plugin any, opts ...Option) (*Stub, error) {
	c, err := newCore(plugin, opts)
	if err != nil {
		return nil, err
	}
	id, err := resolveIdentity(&c.cfg, os.Getenv, os.Args[0])
	if err != nil {
		return nil, err
	}
	if c.cfg.reconnectInitial > 0 && id.source == givenConn {
		return nil, errors.New("stub: WithReconnect cannot be combined with WithConnection")
	}
	c.name = api.FullPluginName(id.idx, id.name)
	if c.cfg.observer != nil {
		c.metrics = &stubMetrics{obs: c.cfg.observer}
	}
	c.log.Info("created plugin stub", "handles", c.implemented().String(), "connection", id.source.String())
	return &Stub{c: c, id: id}, nil
}

// Name returns the plugin's full name, IDX-NAME.
func (st *Stub) Name() string { return st.c.name }

// RegistrationTimeout returns the registration timeout: the runtime's,
// once it configured the plugin, otherwise the default or
// [WithRegistrationTimeout].
func (st *Stub) RegistrationTimeout() time.Duration { return st.c.runtime().RegTimeout }

// RequestTimeout returns the time the runtime waits for the plugin to
// answer a request: the runtime's, once it configured the plugin
// (including a longer timeout granted for [WithRequestTimeout]), otherwise
// [api.DefaultRequestTimeout].
func (st *Stub) RequestTimeout() time.Duration { return st.c.runtime().ReqTimeout }

// RuntimeName returns the runtime's name, once it configured the plugin.
func (st *Stub) RuntimeName() string { return st.c.runtime().RuntimeName }

// RuntimeVersion returns the runtime's version, once it configured the
// plugin.
func (st *Stub) RuntimeVersion() string { return st.c.runtime().RuntimeVersion }

// RuntimeNRIVersion returns the runtime's NRI version as reported by it or
// inferred from its name and version, or "" if it is not known.
func (st *Stub) RuntimeNRIVersion() string { return st.c.runtime().NRIVersion }

// PluginNRIVersion returns the NRI protocol version the stub speaks,
// [api.NRIVersion].
func (st *Stub) PluginNRIVersion() string { return api.NRIVersion }

// Subscription returns the events the plugin is subscribed to: after
// Configure, the effective subscription (intersected with what the
// runtime supports); before, the subscription the stub will ask for.
func (st *Stub) Subscription() api.EventMask { return st.c.runtime().Subscription }

// Start connects to the runtime, registers the plugin and waits until the
// runtime has configured it and accepted the registration; see the package
// documentation. ctx bounds the registration only; use [Stub.Stop] or
// [Stub.Run] to end the stub.
func (st *Stub) Start(ctx context.Context) error {
	st.mu.Lock()
	if st.life != nil && !st.life.finished() {
		st.mu.Unlock()
		return ErrAlreadyStarted
	}
	life := newLifetime()
	st.life = life
	st.mu.Unlock()
	st.applyProcessSettings()
	// Connecting before the health endpoints answer: /livez must not see
	// the state of a stub not started yet.
	st.c.metrics.setState(StateConnecting)
	if err := st.startHealth(); err != nil {
		st.c.metrics.setState(StateStopped)
		life.finish(err)
		return err
	}

	sess, err := st.connectAndRegister(ctx, life.stopC)
	if err != nil {
		st.c.metrics.setState(StateStopped)
		st.stopHealth()
		if errors.Is(err, ErrClosed) {
			life.finish(nil)
		} else {
			life.finish(err)
		}
		return err
	}
	st.c.metrics.registered(false)
	go st.supervise(life, sess)
	return nil
}

// connectAndRegister connects and registers. The session is current
// (for UpdateContainers from handlers) as soon as it exists.
func (st *Stub) connectAndRegister(ctx context.Context, stopC <-chan struct{}) (*session, error) {
	conn, err := st.connect(st.c.runtime().RegTimeout)
	if err != nil {
		return nil, err
	}
	sess, err := newSession(st.c, conn)
	if err != nil {
		return nil, err
	}
	st.setSession(nil, sess)
	if err := st.register(ctx, sess, stopC); err != nil {
		st.setSession(sess, nil)
		sess.close()
		return nil, err
	}
	return sess, nil
}

// setSession replaces the current session old (nil: any) by s.
func (st *Stub) setSession(old, s *session) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old == nil || st.sess == old {
		st.sess = s
	}
}

// supervise owns a started lifetime: it waits for the connection to end,
// reconnects if configured to, and finishes the lifetime.
func (st *Stub) supervise(life *lifetime, sess *session) {
	for {
		reason := st.serve(life, sess)
		st.setSession(sess, nil)
		st.c.metrics.setState(StateConnecting)
		st.c.log.Info("connection to runtime ended", "reason", reason)
		if hook := st.c.cfg.onClose; hook != nil {
			life.inHook.Store(true)
			hook(reason)
			life.inHook.Store(false)
		}
		if errors.Is(reason, ErrClosed) {
			st.c.metrics.setState(StateStopped)
			life.finish(nil)
			return
		}
		if st.c.cfg.reconnectInitial == 0 || st.id.source != dialSocket {
			st.c.metrics.setState(StateStopped)
			life.finish(reason)
			return
		}
		if sess = st.reconnect(life); sess == nil {
			st.c.metrics.setState(StateStopped)
			life.finish(nil)
			return
		}
		st.c.metrics.registered(true)
	}
}

// serve waits until the session ends and returns why.
func (st *Stub) serve(life *lifetime, sess *session) error {
	select {
	case <-sess.lostC:
		sess.close()
		return lostError("", sess.cause())
	case <-sess.shutdownC:
		// Let the answer reach the runtime, which closes the connection.
		grace := time.NewTimer(flushGrace)
		select {
		case <-sess.lostC:
		case <-grace.C:
		case <-life.stopC:
		}
		grace.Stop()
		sess.close()
		return ErrShutdown
	case <-life.stopC:
		sess.close()
		return ErrClosed
	}
}

// reconnect dials and registers again, with exponential backoff, until it
// succeeds or the stub is stopped (then it returns nil).
func (st *Stub) reconnect(life *lifetime) *session {
	delay := st.c.cfg.reconnectInitial
	for attempt := 1; ; attempt++ {
		timer := time.NewTimer(delay)
		select {
		case <-life.stopC:
			timer.Stop()
			return nil
		case <-timer.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		sess, err := st.connectAndRegister(ctx, life.stopC)
		cancel()
		if err == nil {
			st.c.log.Info("reconnected to runtime", "attempt", attempt)
			return sess
		}
		if errors.Is(err, ErrClosed) {
			return nil
		}
		st.c.log.Warn("reconnecting to runtime failed", "attempt", attempt, "retryIn", min(2*delay, st.c.cfg.reconnectMax), "error", err)
		delay = min(2*delay, st.c.cfg.reconnectMax)
	}
}

// Stop stops the stub: it closes the connection and ends [Stub.Run] and
// [Stub.Wait]. It waits until the stub has stopped, except when called
// from the [WithOnClose] hook. It also stops serving the endpoints of
// [WithObserver], which outlive a lifetime that ended by itself until
// then. Stopping a stub that is not running does nothing else.
func (st *Stub) Stop() {
	st.mu.Lock()
	life := st.life
	st.mu.Unlock()
	if life == nil {
		return
	}
	life.stop()
	if !life.inHook.Load() {
		<-life.done
	}
	st.stopHealth()
}

// Wait blocks until a started stub stops and returns why: nil after
// [Stub.Stop], an error wrapping [ErrShutdown] after the runtime shut the
// plugin down, an error wrapping [ErrConnectionLost] when the connection
// was lost, or the error of a failed Start. It returns [ErrNotStarted] if
// the stub was never started.
func (st *Stub) Wait() error {
	st.mu.Lock()
	life := st.life
	st.mu.Unlock()
	if life == nil {
		return ErrNotStarted
	}
	<-life.done
	return life.err
}

// Run starts the stub and serves until the stub stops (see [Stub.Wait]) or
// ctx is done, when it stops the stub and returns ctx.Err(). The observer
// of [WithObserver] runs until Run returns.
func (st *Stub) Run(ctx context.Context) error {
	if err := st.Start(ctx); err != nil {
		return err
	}
	st.mu.Lock()
	life := st.life
	st.mu.Unlock()
	select {
	case <-life.done:
		st.stopHealth()
		return life.err
	case <-ctx.Done():
		st.Stop()
		return ctx.Err()
	}
}

// UpdateContainers asks the runtime to update and evict containers,
// unsolicited. It returns the updates that failed. When the runtime fails
// the request, it returns the error and, from a nrikit runtime, the
// updates that failed too, which travel in the error's status details
// (docs/protocol.md, section 9); other runtimes send none. Without a
// deadline in ctx, the request timeout applies.
func (st *Stub) UpdateContainers(ctx context.Context, update []*api.ContainerUpdate, evict []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	st.mu.Lock()
	life, sess := st.life, st.sess
	st.mu.Unlock()
	switch {
	case life == nil:
		return nil, ErrNotStarted
	case sess == nil && life.finished() && life.err == nil:
		return nil, ErrClosed
	case sess == nil:
		return nil, ErrNotConnected
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, st.RequestTimeout())
		defer cancel()
	}
	rsp, err := sess.runtime.UpdateContainers(ctx, &api.UpdateContainersRequest{Update: update, Evict: evict})
	if err != nil {
		failed := rsp.GetFailed()
		if failed == nil {
			failed = failedInStatus(err)
		}
		return failed, fmt.Errorf("stub: UpdateContainers: %w", err)
	}
	return rsp.GetFailed(), nil
}

// failedInStatus returns the updates that failed that a nrikit runtime
// sends in the details of UpdateContainers' error status, as an
// UpdateContainersResponse, or nil.
func failedInStatus(err error) []*api.ContainerUpdate {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Proto().GetDetails() {
		rsp := &api.UpdateContainersResponse{}
		if d.MessageIs(rsp) && d.UnmarshalTo(rsp) == nil {
			return rsp.GetFailed()
		}
	}
	return nil
}
