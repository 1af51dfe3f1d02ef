package adaptation

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// connEndpoint is a plugin at the other end of a connection (launched or
// external): the ttrpc client of its Plugin service on mux connection 1,
// and a ttrpc server of the Runtime service on connection 2.
type connEndpoint struct {
	api.PluginService
	sess   *nriconn.Session
	mux    *mux.Mux
	client *ttrpc.Client
	// handlers tracks the Runtime service calls in progress.
	handlers gate
	// gate holds off reading the plugin's requests while too many are
	// unanswered (see wire.Gate).
	gate *wire.Gate
	// msgLimit is the largest ttrpc message accepted from the plugin now
	// (see setMessageLimit); violation is why the connection was closed
	// for exceeding it or another bound, which violated is told.
	msgLimit  atomic.Int64
	violation atomic.Pointer[error]
	violated  func(error)

	// flush is signalled by the first write of a response once armed:
	// the moment the RegisterPlugin answer has left.
	flush *wire.WriteSignal

	// onClose, if set, runs last in Close (launched plugins: reap the
	// process).
	onClose   func() error
	closeOnce sync.Once
	closeErr  error
}

// connLimits are the bounds of one plugin connection.
type connLimits struct {
	// writeTimeout bounds every write to the plugin (mux.WithWriteTimeout)
	// until the plugin is configured (then its request timeout does).
	writeTimeout time.Duration
	// maxInFlight bounds the plugin's unanswered Runtime-service requests.
	maxInFlight int
	// clientOpts and serverOpts are the runtime's own ttrpc options
	// (WithTTRPCOptions), such as otelttrpc's interceptors.
	clientOpts []ttrpc.ClientOpts
	serverOpts []ttrpc.ServerOpt
	// violated, if set, is told why the connection is closed when the
	// plugin broke a bound of what it sends.
	violated func(error)
}

// preConfigureLimit bounds frames and ttrpc messages from a plugin until
// it is configured: it sends only RegisterPlugin and its answer to
// Configure by then, a few hundred bytes, and a connection that has not
// registered should not make the runtime allocate much.
const preConfigureLimit = 64 << 10

// newConnEndpoint sets up the NRI connection layout on conn (an
// nriconn.Session) and serves the Runtime service returned by rt on it;
// onClose (may be nil) runs last in Close. The endpoint owns conn.
func newConnEndpoint(ctx context.Context, conn net.Conn, lim connLimits, rt func(*connEndpoint) api.RuntimeService, onClose func() error) (*connEndpoint, error) {
	e := &connEndpoint{flush: wire.NewWriteSignal(), onClose: onClose, gate: wire.NewGate(lim.maxInFlight, MaxMessageSize), violated: lim.violated}
	sess, err := nriconn.Open(conn, nriconn.RuntimeRole, nriconn.Config{
		WriteTimeout: lim.writeTimeout,
		// wire.SendEncoded last: the payloads of callPayload.
		ClientOptions: append(slices.Clip(lim.clientOpts), ttrpc.WithChainUnaryClientInterceptor(wire.SendEncoded)),
		ServerOptions: lim.serverOpts,
		Init: func(s *nriconn.Session) {
			e.mux = s.Mux
			e.setMessageLimit(preConfigureLimit)
		},
		ClientConn: func(c net.Conn) net.Conn { return e.follow(c, nil) },
		Register: func(s *nriconn.Session) {
			e.client = s.Client
			e.PluginService = api.NewPluginClient(s.Client)
			api.RegisterRuntimeService(s.Server, &gatedRuntime{rt: rt(e), gate: &e.handlers})
		},
		ServerConn: func(c net.Conn) net.Conn { return e.flush.Wrap(e.follow(c, e.gate)) },
		Context:    ctx,
	})
	if err != nil {
		return nil, err
	}
	e.sess = sess
	return e, nil
}

// call encodes req, with what sh shares (see wire.Shared.Encode), and makes the
// call over the connection.
func (e *connEndpoint) call(ctx context.Context, m *method, req proto.Message, sh *wire.Shared) (proto.Message, error) {
	enc, buf, err := sh.Encode(req)
	if err != nil {
		return nil, err
	}
	rsp := m.answer.New().Interface()
	if enc != nil {
		err = e.callPayload(ctx, m.name, enc, rsp)
	} else {
		err = e.client.Call(ctx, api.PluginServiceName, m.name, req, rsp)
	}
	// ttrpc copied the encoding into its message before sending it.
	buf.Free()
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// Synchronize sends a part of wire.EncodedSyncParts as it was encoded (see
// callEncoded); another request as ttrpc encodes it.
func (e *connEndpoint) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	rsp := &api.SynchronizeResponse{}
	if err := e.callEncoded(ctx, "Synchronize", req, rsp); err != nil {
		return nil, err
	}
	return rsp, nil
}

// callEncoded calls method with req. A request that holds nothing but
// unknown fields (a part of wire.EncodedSyncParts) is its own
// encoding: those bytes are sent as they are (callPayload). Another
// request is encoded by ttrpc.
func (e *connEndpoint) callEncoded(ctx context.Context, method string, req, rsp proto.Message) error {
	if enc, ok := wire.OwnEncoding(req); ok {
		return e.callPayload(ctx, method, enc, rsp)
	}
	return e.client.Call(ctx, api.PluginServiceName, method, req, rsp)
}

// callPayload calls method with a request encoded as payload: those bytes
// become the payload of ttrpc's request as they are (wire.CallPayload).
// payload is not used once callPayload has returned.
func (e *connEndpoint) callPayload(ctx context.Context, method string, payload []byte, rsp proto.Message) error {
	return wire.CallPayload(ctx, e.client, api.PluginServiceName, method, payload, rsp)
}

// failure is FailureOversize for an answer refused by its bounds
// (boundAnswers), FailureRejected for a status the plugin answered with,
// FailureLost for anything else (ttrpc failed to decode what the plugin
// sent).
func (e *connEndpoint) failure(err error) FailureKind {
	if isOversize(err) {
		return FailureOversize
	}
	if _, isStatus := status.FromError(err); isStatus {
		return FailureRejected
	}
	return FailureLost
}

// syncParts returns the parts encoded ahead (see wire.EncodedSyncParts).
func (e *connEndpoint) syncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *wire.SyncParts {
	return wire.EncodedSyncParts(pods, ctrs, limit)
}

// Done is closed when the connection is gone.
func (e *connEndpoint) Done() <-chan struct{} { return e.mux.Done() }

// configured bounds the writes to the plugin by its request timeout and
// lifts the limit on message sizes of a plugin that has not registered.
func (e *connEndpoint) configured(requestTimeout time.Duration) {
	e.mux.SetWriteTimeout(requestTimeout)
	e.setMessageLimit(MaxMessageSize)
}

// setMessageLimit bounds the frames and ttrpc messages accepted from the
// plugin from now on ([MaxMessageSize] lifts the bound).
func (e *connEndpoint) setMessageLimit(n int) {
	e.msgLimit.Store(int64(n))
	e.mux.SetReadLimit(n + wire.HeaderSize)
}

// follow returns c, a logical connection of the endpoint, with its
// messages followed (see wire.Conn), gated by gate if not nil.
func (e *connEndpoint) follow(c net.Conn, gate *wire.Gate) *wire.Conn {
	return wire.NewConn(c, wire.ConnConfig{Limit: &e.msgLimit, Violate: e.violate, Gone: e.mux.Done(), Gate: gate})
}

// violate closes the connection because the plugin broke a limit.
func (e *connEndpoint) violate(err error) {
	if e.violation.CompareAndSwap(nil, &err) && e.violated != nil {
		e.violated(err)
	}
	e.mux.Close()
}

// cause says why the connection is gone.
func (e *connEndpoint) cause() error {
	if v := e.violation.Load(); v != nil {
		return *v
	}
	return e.mux.Err()
}

// Close tears the connection down, waits for the Runtime service calls
// in progress, then runs onClose.
func (e *connEndpoint) Close() error {
	e.closeOnce.Do(func() {
		err := e.sess.Close()
		e.handlers.closeAndWait()
		if e.onClose != nil {
			err = errors.Join(err, e.onClose())
		}
		e.closeErr = err
	})
	return e.closeErr
}

// armFlush makes the next response write signal flush.
func (e *connEndpoint) armFlush() { e.flush.Arm() }

// waitFlushed waits until the armed response was written, the connection
// is gone, or d passed.
func (e *connEndpoint) waitFlushed(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.flush.Written():
	case <-e.mux.Done():
	case <-t.C:
	}
}

// waitPeerClose waits until the plugin closed the connection or d passed.
func (e *connEndpoint) waitPeerClose(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.mux.Done():
	case <-t.C:
	}
}

// gatedRuntime counts the Runtime service calls in a gate, so Close can
// wait for them, and refuses calls once it is closed.
type gatedRuntime struct {
	rt   api.RuntimeService
	gate *gate
}

func (g *gatedRuntime) RegisterPlugin(ctx context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	if !g.gate.enter() {
		return nil, ttrpc.ErrServerClosed
	}
	defer g.gate.leave()
	return g.rt.RegisterPlugin(ctx, req)
}

func (g *gatedRuntime) UpdateContainers(ctx context.Context, req *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	if !g.gate.enter() {
		return nil, ttrpc.ErrServerClosed
	}
	defer g.gate.leave()
	return g.rt.UpdateContainers(ctx, req)
}

// gate counts activities and lets one wait for them after closing it to
// new ones.
type gate struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n drops to 0 after closing
}

func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

func (g *gate) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	if g.n == 0 {
		g.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	g.idle = idle
	g.mu.Unlock()
	<-idle
}
