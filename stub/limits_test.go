package stub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/sirupsen/logrus"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/internal/socketpair"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// The tests of this file guard the stub's bounds against a runtime that
// stops reading its socket (issue 13): without a write timeout, a write
// the runtime does not take blocks forever, whatever the caller's
// context says, and so does everything waiting for it.

// frozenTimeout is the request timeout the frozen runtime sends in
// Configure; it becomes the stub's write timeout.
const frozenTimeout = time.Second

// bigPayload is larger than any socket buffer, so that writing it blocks
// when the peer does not read.
const bigPayload = 2 << 20

// freezableConn is a trunk whose reads stop, once frozen, until it is
// closed: the peer's writes fill the socket buffers and then block. (A
// read already under way when it freezes still completes.)
type freezableConn struct {
	net.Conn
	frozen     chan struct{}
	freezeOnce sync.Once
	closed     chan struct{}
	closeOnce  sync.Once
}

func (c *freezableConn) Read(p []byte) (int, error) {
	select {
	case <-c.frozen:
		<-c.closed
		return 0, net.ErrClosed
	default:
	}
	return c.Conn.Read(p)
}

func (c *freezableConn) freeze() { c.freezeOnce.Do(func() { close(c.frozen) }) }

func (c *freezableConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// frozenRuntime is the runtime end of one connection, built from the
// protocol's parts: it registers the plugin (Configure with frozenTimeout
// as request timeout, then an empty Synchronize) and can then stop
// reading its socket, as a stopped or stuck runtime process would.
type frozenRuntime struct {
	trunk      *freezableConn
	closeMux   func() error
	client     *ttrpc.Client
	server     *ttrpc.Server
	plugin     api.PluginService
	registered chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once
}

// newFrozenRuntime returns the runtime and the plugin's end of the
// connection. The runtime is closed when the test ends.
func newFrozenRuntime(t *testing.T) (*frozenRuntime, net.Conn) {
	t.Helper()
	pair, err := socketpair.New()
	if err != nil {
		t.Fatal(err)
	}
	local, err := pair.LocalConn()
	if err != nil {
		pair.Close()
		t.Fatal(err)
	}
	peer, err := net.FileConn(pair.PeerFile())
	pair.Close()
	if err != nil {
		local.Close()
		t.Fatal(err)
	}
	trunk := &freezableConn{Conn: local, frozen: make(chan struct{}), closed: make(chan struct{})}
	lay, err := nriconn.New(trunk, nriconn.RuntimeRole, nil)
	if err != nil {
		peer.Close()
		t.Fatal(err)
	}
	r := &frozenRuntime{
		trunk:      trunk,
		closeMux:   lay.Mux.Close,
		server:     lay.Server,
		client:     ttrpc.NewClient(lay.ClientConn),
		registered: make(chan struct{}),
	}
	r.plugin = api.NewPluginClient(r.client)
	api.RegisterRuntimeService(lay.Server, (*frozenRuntimeService)(r))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = lay.Server.Serve(context.Background(), lay.Listener)
	}()
	t.Cleanup(r.close)
	return r, peer
}

// freeze stops reading the socket.
func (r *frozenRuntime) freeze() { r.trunk.freeze() }

func (r *frozenRuntime) close() {
	r.closeOnce.Do(func() {
		r.client.Close()
		r.server.Close()
		_ = r.closeMux()
		r.wg.Wait()
	})
}

// waitRegistered waits until the plugin answered Synchronize.
func (r *frozenRuntime) waitRegistered(t *testing.T) {
	t.Helper()
	select {
	case <-r.registered:
	case <-testContext(t).Done():
		t.Fatal("plugin not synchronized")
	}
}

type frozenRuntimeService frozenRuntime

func (rs *frozenRuntimeService) RegisterPlugin(ctx context.Context, _ *api.RegisterPluginRequest) (*api.Empty, error) {
	r := (*frozenRuntime)(rs)
	if _, err := r.plugin.Configure(ctx, &api.ConfigureRequest{
		RuntimeName:         "frozen",
		RuntimeVersion:      "v0.0.0",
		NRIVersion:          "v0.12.5",
		RegistrationTimeout: (5 * time.Second).Milliseconds(),
		RequestTimeout:      frozenTimeout.Milliseconds(),
	}); err != nil {
		return nil, err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if _, err := r.plugin.Synchronize(ctx, &api.SynchronizeRequest{}); err == nil {
			close(r.registered)
		}
	}()
	return &api.Empty{}, nil
}

func (rs *frozenRuntimeService) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return &api.UpdateContainersResponse{}, nil
}

// startOnFrozen starts a stub for plugin on a frozen runtime (not frozen
// yet) and waits until it is synchronized.
func startOnFrozen(t *testing.T, plugin any, opts ...stub.Option) (*stub.Stub, *frozenRuntime) {
	t.Helper()
	rt, conn := newFrozenRuntime(t)
	all := append([]stub.Option{stub.WithPluginIdx("10"), stub.WithPluginName("test"), stub.WithConnection(conn)}, opts...)
	s, err := stub.New(plugin, all...)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	if err := s.Start(testContext(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	rt.waitRegistered(t)
	if got := s.RequestTimeout(); got != frozenTimeout {
		t.Fatalf("RequestTimeout = %v, want the runtime's %v", got, frozenTimeout)
	}
	return s, rt
}

// waitStopped returns what Wait returns, failing the test unless it
// returns within d.
func waitStopped(t *testing.T, s *stub.Stub, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("stub still running %v later", d)
		return nil
	}
}

// bigUpdates returns container updates of about n bytes in all.
func bigUpdates(n int) []*api.ContainerUpdate {
	id := strings.Repeat("x", 1024)
	updates := make([]*api.ContainerUpdate, n/len(id))
	for i := range updates {
		updates[i] = &api.ContainerUpdate{ContainerId: id}
	}
	return updates
}

func TestUpdateContainersBoundedWhenRuntimeStopsReading(t *testing.T) {
	logs, withLogs := recorder()
	s, rt := startOnFrozen(t, &creator{}, withLogs)
	rt.freeze()

	// The context allows far more than the bound: the write timeout,
	// not the context, must end the call.
	ctx, cancel := context.WithTimeout(context.Background(), 20*frozenTimeout)
	defer cancel()
	start := time.Now()
	_, err := s.UpdateContainers(ctx, bigUpdates(bigPayload), nil)
	took := time.Since(start)
	if err == nil {
		t.Fatal("UpdateContainers succeeded, but the runtime does not read")
	}
	// Twice the write timeout on a quiet machine; the second half
	// stretches with the machine's load.
	if bound := frozenTimeout + testscale.D(frozenTimeout); took > bound {
		t.Errorf("UpdateContainers returned after %v, want within %v (the write timeout and as much again, scaled by the load)", took, bound)
	}
	// The connection is unusable: the stub drops it.
	if err := waitStopped(t, s, testscale.D(2*frozenTimeout)); !errors.Is(err, stub.ErrConnectionLost) {
		t.Errorf("Wait = %v, want a lost connection", err)
	}
	if recs := logs.find(slog.LevelWarn, "runtime did not take the plugin's data within the write timeout"); len(recs) != 1 {
		t.Errorf("%d warnings about the runtime not reading, want 1", len(recs))
	}
}

// bigAnswerer answers CreateContainer, once released, with an adjustment
// of bigPayload bytes.
type bigAnswerer struct {
	called  chan struct{}
	release chan struct{}
}

func newBigAnswerer() *bigAnswerer {
	return &bigAnswerer{called: make(chan struct{}), release: make(chan struct{})}
}

func (b *bigAnswerer) CreateContainer(ctx context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	close(b.called)
	<-b.release
	return &api.ContainerAdjustment{Annotations: map[string]string{"big": strings.Repeat("x", bigPayload)}}, nil, nil
}

// answerIntoFrozen makes the runtime send CreateContainer and stop
// reading before the plugin answers, then releases the answer: writing
// it blocks. The request is still pending when the function returns.
func answerIntoFrozen(t *testing.T, rt *frozenRuntime, plugin *bigAnswerer) {
	t.Helper()
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, _ = rt.plugin.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod("p"), Container: ctr("c", "p")})
	}()
	select {
	case <-plugin.called:
	case <-testContext(t).Done():
		t.Fatal("CreateContainer not delivered")
	}
	rt.freeze()
	close(plugin.release)
}

func TestAnswerBoundedWhenRuntimeStopsReading(t *testing.T) {
	plugin := newBigAnswerer()
	s, rt := startOnFrozen(t, plugin)
	answerIntoFrozen(t, rt, plugin)
	// The answer cannot be written within the write timeout: the stub
	// gives the connection up.
	if err := waitStopped(t, s, testscale.D(2*frozenTimeout)); !errors.Is(err, stub.ErrConnectionLost) {
		t.Errorf("Wait = %v, want a lost connection", err)
	}
}

func TestStopBoundedWhileAnswerBlocked(t *testing.T) {
	ttrpcLog := captureTTRPCLog(t)
	plugin := newBigAnswerer()
	s, rt := startOnFrozen(t, plugin)
	answerIntoFrozen(t, rt, plugin)
	time.Sleep(frozenTimeout / 4) // the answer is being written by now

	start := time.Now()
	s.Stop()
	// Stop closes the connection; it does not wait for the runtime to
	// take the answer, nor for the write timeout.
	if took := time.Since(start); took > testscale.D(frozenTimeout/2) {
		t.Errorf("Stop took %v with an answer blocked, want well under the write timeout %v", took, frozenTimeout)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Stop = %v", err)
	}
	// The answer was dropped with the connection, not failed into a
	// closed connection ("failed sending message on channel").
	rt.close()
	if errs := ttrpcLog.errors(); len(errs) > 0 {
		t.Errorf("ttrpc logged errors on Stop:\n%s", strings.Join(errs, "\n"))
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// errors returns the lines logged at error level or above.
func (l *lockedBuffer) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		if strings.Contains(line, "level=error") || strings.Contains(line, "level=fatal") || strings.Contains(line, "level=panic") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// captureTTRPCLog collects what ttrpc logs (through containerd/log, that
// is logrus's standard logger) until the test ends.
func captureTTRPCLog(t *testing.T) *lockedBuffer {
	buf := &lockedBuffer{}
	logger := logrus.StandardLogger()
	prev := logger.Out
	logger.SetOutput(buf)
	t.Cleanup(func() { logger.SetOutput(prev) })
	return buf
}

// syncUpdater answers Synchronize with many updates, so that its answer
// takes a while to write.
type syncUpdater struct {
	shutdowner
}

func (*syncUpdater) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	return bigUpdates(256 << 10), nil
}

// TestNormalStopLogsNoErrors stops plugins normally, from either side and
// at the moments that used to make ttrpc log an error: right after Start,
// with the answer to Synchronize under way, and after a Shutdown.
func TestNormalStopLogsNoErrors(t *testing.T) {
	ttrpcLog := captureTTRPCLog(t)
	pods := make([]*api.PodSandbox, 200)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("%0100d", i))
	}
	rt := stubtest.NewRuntime(t, stubtest.WithState(pods, nil))
	for i := range 20 {
		// The plugin stops right after Start returned, which it does
		// as soon as Synchronize arrives.
		s, _ := newStub(t, rt, &syncUpdater{})
		if err := s.Start(testContext(t)); err != nil {
			t.Fatalf("round %d: Start: %v", i, err)
		}
		s.Stop()

		// The runtime shuts the plugin down.
		s, p := startStub(t, rt, &syncUpdater{})
		if err := p.Shutdown(testContext(t)); err != nil {
			t.Fatalf("round %d: Shutdown: %v", i, err)
		}
		if err := waitStopped(t, s, testTimeout); !errors.Is(err, stub.ErrShutdown) {
			t.Fatalf("round %d: Wait after Shutdown = %v", i, err)
		}
		s.Stop()
	}
	rt.Close()
	if errs := ttrpcLog.errors(); len(errs) > 0 {
		t.Errorf("ttrpc logged errors on normal stops:\n%s", strings.Join(errs, "\n"))
	}
}
