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
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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
	// unanswered (inflight.go).
	gate *inflightGate
	// msgLimit is the largest ttrpc message accepted from the plugin now
	// (see setMessageLimit); violation is why the connection was closed
	// for exceeding it or another bound, which violated is told.
	msgLimit  atomic.Int64
	violation atomic.Pointer[error]
	violated  func(error)

	// flushed is closed after the first write of a response once armed:
	// the moment the RegisterPlugin answer has left.
	armed     atomic.Bool
	flushed   chan struct{}
	flushOnce sync.Once

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
	e := &connEndpoint{flushed: make(chan struct{}), onClose: onClose, gate: newInflightGate(lim.maxInFlight), violated: lim.violated}
	sess, err := nriconn.Open(conn, nriconn.RuntimeRole, nriconn.Config{
		WriteTimeout: lim.writeTimeout,
		// sendEncoded last: the payloads of callEncoded.
		ClientOptions: append(slices.Clip(lim.clientOpts), ttrpc.WithChainUnaryClientInterceptor(sendEncoded)),
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
		ServerConn: func(c net.Conn) net.Conn { return &flushConn{Conn: e.follow(c, e.gate), e: e} },
		Context:    ctx,
	})
	if err != nil {
		return nil, err
	}
	e.sess = sess
	return e, nil
}

// call encodes req, with what sh shares (see shared.wire), and makes the
// call over the connection.
func (e *connEndpoint) call(ctx context.Context, m *method, req proto.Message, sh *shared) (proto.Message, error) {
	enc, buf, err := sh.wire(req)
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
	buf.free()
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// Synchronize sends a part of encodedSyncParts as it was encoded (see
// callEncoded); another request as ttrpc encodes it.
func (e *connEndpoint) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	rsp := &api.SynchronizeResponse{}
	if err := e.callEncoded(ctx, "Synchronize", req, rsp); err != nil {
		return nil, err
	}
	return rsp, nil
}

// callEncoded calls method with req. A request that holds nothing but
// unknown fields (a part of encodedSyncParts) is its own
// encoding: those bytes are sent as they are (callPayload). Another
// request is encoded by ttrpc.
func (e *connEndpoint) callEncoded(ctx context.Context, method string, req, rsp proto.Message) error {
	if enc, ok := ownEncoding(req); ok {
		return e.callPayload(ctx, method, enc, rsp)
	}
	return e.client.Call(ctx, api.PluginServiceName, method, req, rsp)
}

// callPayload calls method with a request encoded as payload: those bytes
// become the payload of ttrpc's request as they are (sendEncoded), where
// ttrpc's codec would copy them into a new buffer first. payload is not
// used once callPayload has returned.
func (e *connEndpoint) callPayload(ctx context.Context, method string, payload []byte, rsp proto.Message) error {
	return e.client.Call(&encodedCtx{Context: ctx, method: method, payload: payload},
		api.PluginServiceName, method, emptyRequest, rsp)
}

// emptyRequest is what ttrpc encodes for a request sent as encoded: no
// bytes. It is never written to.
var emptyRequest = &api.Empty{}

// ownEncoding returns the bytes req marshals to if they are its unknown
// fields alone.
func ownEncoding(req proto.Message) ([]byte, bool) {
	r := req.ProtoReflect()
	if !r.IsValid() {
		return nil, false
	}
	enc := r.GetUnknown()
	if len(enc) == 0 {
		return nil, false
	}
	known := false
	r.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		known = true
		return false
	})
	return enc, !known
}

// encodedKey is the context key of the encodedCtx of a call whose
// request is sent as encoded (callPayload).
type encodedKey struct{}

// encodedCtx is the context of a call to method whose request is sent as
// payload: one allocation per call for the call's context and what
// sendEncoded needs.
type encodedCtx struct {
	context.Context
	method  string
	payload []byte
}

// Value returns c for encodedKey, the value of c's parent for another key.
func (c *encodedCtx) Value(key any) any {
	if _, ok := key.(encodedKey); ok {
		return c
	}
	return c.Context.Value(key)
}

// sendEncoded is the ttrpc client interceptor of a plugin connection
// that puts the encoding callPayload passes along as the payload of the
// call it was made for. The payload is taken out of ttrpc's request
// again when the call returns: the caller may reuse its buffer then.
func sendEncoded(ctx context.Context, req *ttrpc.Request, rsp *ttrpc.Response, _ *ttrpc.UnaryClientInfo, invoke ttrpc.Invoker) error {
	enc, ok := ctx.Value(encodedKey{}).(*encodedCtx)
	if !ok || enc.method != req.Method || len(req.Payload) != 0 {
		return invoke(ctx, req, rsp)
	}
	empty := req.Payload
	req.Payload = enc.payload
	err := invoke(ctx, req, rsp)
	req.Payload = empty
	return err
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

// syncParts returns the parts encoded ahead (see encodedSyncParts).
func (e *connEndpoint) syncParts(pods []*api.PodSandbox, ctrs []*api.Container, limit int) *syncParts {
	return encodedSyncParts(pods, ctrs, limit)
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
	e.mux.SetReadLimit(n + ttrpcHeaderSize)
}

// follow returns c, a logical connection of the endpoint, with its
// messages followed (see msgConn), gated by gate if not nil.
func (e *connEndpoint) follow(c net.Conn, gate *inflightGate) *msgConn {
	m := &msgConn{Conn: c, limit: &e.msgLimit, violate: e.violate, gone: e.mux.Done(), gate: gate}
	m.in.envelopes = true
	return m
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

// armFlush makes the next response write close flushed.
func (e *connEndpoint) armFlush() { e.armed.Store(true) }

// waitFlushed waits until the armed response was written, the connection
// is gone, or d passed.
func (e *connEndpoint) waitFlushed(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.flushed:
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

// flushConn is the Runtime service connection, its messages followed and
// gated (see follow); it closes flushed after the first write once armed.
type flushConn struct {
	net.Conn
	e *connEndpoint
}

func (c *flushConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.e.armed.Load() {
		c.e.flushOnce.Do(func() { close(c.e.flushed) })
	}
	return n, err
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
