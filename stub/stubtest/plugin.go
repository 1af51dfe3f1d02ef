package stubtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
)

// ErrNotSubscribed is returned by the event helpers of [Plugin] for events
// the plugin is not subscribed to; a runtime would not send them.
var ErrNotSubscribed = errors.New("stubtest: plugin not subscribed to the event")

// rejectGrace is how long the runtime waits after a rejecting answer
// before it closes the connection, so that the answer is delivered.
const rejectGrace = 100 * time.Millisecond

// Plugin is the runtime's side of one plugin connection.
type Plugin struct {
	r      *Runtime
	sess   *nriconn.Session
	mux    *mux.Mux
	plugin api.PluginService
	cancel context.CancelFunc

	updates     chan *api.UpdateContainersRequest
	registering chan struct{}
	registered  chan struct{}
	done        chan struct{}
	regReqOnce  sync.Once
	regOnce     sync.Once
	closeOnce   sync.Once
	finishOnce  sync.Once
	handshakeMu sync.Mutex // serializes RegisterPlugin

	mu        sync.Mutex
	name, idx string
	cfgReq    *api.ConfigureRequest
	cfgRsp    *api.ConfigureResponse
	events    api.EventMask
	syncRsp   []*api.SynchronizeResponse
	syncParts int
	err       error
}

// newPlugin sets up the runtime side of conn (an nriconn.Session).
// Called with r.mu held.
func newPlugin(r *Runtime, conn net.Conn) (*Plugin, error) {
	p := &Plugin{
		r:           r,
		updates:     make(chan *api.UpdateContainersRequest, 64),
		registering: make(chan struct{}),
		registered:  make(chan struct{}),
		done:        make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	// A plugin that stops reading fails the runtime's writes, instead of
	// blocking them (and the test) for ever.
	sess, err := nriconn.Open(conn, nriconn.RuntimeRole, nriconn.Config{
		WriteTimeout: r.cfg.writeTimeout(),
		Init:         func(s *nriconn.Session) { p.mux = s.Mux },
		Register: func(s *nriconn.Session) {
			p.plugin = api.NewPluginClient(s.Client)
			api.RegisterRuntimeService(s.Server, (*runtimeService)(p))
		},
		ServerConn: func(c net.Conn) net.Conn { return &answerConn{Conn: c, p: p} },
		Context:    ctx,
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("stubtest: %w", err)
	}
	p.sess, p.cancel = sess, cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		<-sess.Done()
		p.finish(fmt.Errorf("connection closed: %w", sess.Err()))
		p.Close()
	}()
	return p, nil
}

// answerConn is the Runtime service connection as ttrpc's server sees
// it. When the connection fails, it ends as if the plugin had closed it
// cleanly: a failed read returns io.EOF and a failed write is dropped,
// and the runtime closes the connection and records why ([Plugin.Err]).
// ttrpc's server would otherwise log, as an error, every end of a
// connection other than a clean EOF, such as a plugin that stops while
// the runtime writes to it.
type answerConn struct {
	net.Conn
	p *Plugin
}

func (c *answerConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, io.EOF
	}
	return n, err
}

func (c *answerConn) Write(b []byte) (int, error) {
	if _, err := c.Conn.Write(b); err != nil {
		c.p.finish(fmt.Errorf("answering the plugin: %w", err))
		c.p.mux.Close()
	}
	return len(b), nil
}

// finish records why the plugin's connection ended (or registration
// failed) and marks it done.
func (p *Plugin) finish(err error) {
	p.finishOnce.Do(func() {
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
		close(p.done)
	})
}

// fail records a registration failure; the connection is closed after a
// short grace.
func (p *Plugin) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	if !p.r.spawn(func() {
		t := time.NewTimer(rejectGrace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.done:
		}
		p.Close()
	}) {
		p.Close()
	}
}

// Close drops the connection, as a crashing runtime would.
func (p *Plugin) Close() {
	p.closeOnce.Do(func() {
		// The session closes the trunk first (see nriconn.Session.Close).
		p.sess.Close()
		p.cancel()
	})
}

// Done is closed when the connection has ended.
func (p *Plugin) Done() <-chan struct{} { return p.done }

// Err returns why registration failed or the connection ended, or nil.
func (p *Plugin) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// WaitRegistered waits until the plugin is registered and synchronized.
// It returns the reason if registration failed or the connection ended
// first.
func (p *Plugin) WaitRegistered(ctx context.Context) error {
	select {
	case <-p.registered:
		return nil
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("stubtest: waiting for registration: %w", ctx.Err())
	}
	select {
	case <-p.registered:
		return nil
	default:
	}
	if err := p.Err(); err != nil {
		return fmt.Errorf("stubtest: plugin not registered: %w", err)
	}
	return errors.New("stubtest: plugin not registered")
}

// Registering is closed when the plugin has called RegisterPlugin.
func (p *Plugin) Registering() <-chan struct{} { return p.registering }

// Name returns the plugin's full name, IDX-NAME, once it called
// RegisterPlugin.
func (p *Plugin) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return api.FullPluginName(p.idx, p.name)
}

// Events returns the events the runtime subscribed the plugin to.
func (p *Plugin) Events() api.EventMask {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.events
}

// ConfigureRequest returns the Configure request sent to the plugin.
func (p *Plugin) ConfigureRequest() *api.ConfigureRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfgReq
}

// ConfigureResponse returns the plugin's answer to Configure.
func (p *Plugin) ConfigureResponse() *api.ConfigureResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfgRsp
}

// SynchronizeResponses returns the plugin's answers to the parts of
// Synchronize, in order.
func (p *Plugin) SynchronizeResponses() []*api.SynchronizeResponse {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*api.SynchronizeResponse(nil), p.syncRsp...)
}

// SynchronizeParts returns how many parts Synchronize was sent in.
func (p *Plugin) SynchronizeParts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.syncParts
}

// Client returns the Plugin service of the plugin, to send any request.
func (p *Plugin) Client() api.PluginService { return p.plugin }

// Updates delivers the plugin's UpdateContainers requests (the runtime
// answers them with no failures). It buffers 64 requests; more block the
// plugin.
func (p *Plugin) Updates() <-chan *api.UpdateContainersRequest { return p.updates }

// Shutdown sends Shutdown to the plugin and closes the connection, as a
// runtime that stops does.
func (p *Plugin) Shutdown(ctx context.Context) error {
	_, err := p.plugin.Shutdown(ctx, &api.Empty{})
	p.Close()
	if err != nil {
		return fmt.Errorf("stubtest: Shutdown: %w", err)
	}
	return nil
}

// subscribed returns ErrNotSubscribed unless the plugin subscribed to e.
func (p *Plugin) subscribed(e api.Event) error {
	if !p.Events().IsSet(e) {
		return fmt.Errorf("%w: %s", ErrNotSubscribed, e.Name())
	}
	return nil
}

// RunPodSandbox sends a RunPodSandbox event, if the plugin subscribed to
// it.
func (p *Plugin) RunPodSandbox(ctx context.Context, pod *api.PodSandbox) (*api.RunPodSandboxResponse, error) {
	if err := p.subscribed(api.Event_RUN_POD_SANDBOX); err != nil {
		return nil, err
	}
	return p.plugin.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod})
}

// CreateContainer sends a CreateContainer request, if the plugin
// subscribed to it.
func (p *Plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.CreateContainerResponse, error) {
	if err := p.subscribed(api.Event_CREATE_CONTAINER); err != nil {
		return nil, err
	}
	return p.plugin.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
}

// StartContainer sends a StartContainer event, if the plugin subscribed
// to it.
func (p *Plugin) StartContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if err := p.subscribed(api.Event_START_CONTAINER); err != nil {
		return err
	}
	_, err := p.plugin.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr})
	return err
}

// StopContainer sends a StopContainer request, if the plugin subscribed
// to it.
func (p *Plugin) StopContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.StopContainerResponse, error) {
	if err := p.subscribed(api.Event_STOP_CONTAINER); err != nil {
		return nil, err
	}
	return p.plugin.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
}

// RemoveContainer sends a RemoveContainer event, if the plugin subscribed
// to it.
func (p *Plugin) RemoveContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	if err := p.subscribed(api.Event_REMOVE_CONTAINER); err != nil {
		return err
	}
	_, err := p.plugin.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
	return err
}

// runtimeService is the Runtime service the plugin calls.
type runtimeService Plugin

// RegisterPlugin performs the registration handshake.
func (rs *runtimeService) RegisterPlugin(ctx context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	p := (*Plugin)(rs)
	p.handshakeMu.Lock()
	defer p.handshakeMu.Unlock()
	cfg := &p.r.cfg
	p.mu.Lock()
	p.name, p.idx = req.GetPluginName(), req.GetPluginIdx()
	p.mu.Unlock()
	p.regReqOnce.Do(func() { close(p.registering) })
	full := fmt.Sprintf("%q", api.FullPluginName(req.GetPluginIdx(), req.GetPluginName()))

	if cfg.unanswered {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, errors.New("stubtest: connection closed")
		}
	}
	reject := func(err error) (*api.Empty, error) {
		p.fail(err)
		return nil, err
	}
	if cfg.rejectCode != codes.OK {
		return reject(status.Error(cfg.rejectCode, cfg.rejectMsg))
	}
	if err := api.CheckPluginName(req.GetPluginName()); err != nil {
		return reject(status.Errorf(codes.InvalidArgument, "plugin %s: %v", full, err))
	}
	if err := api.CheckPluginIndex(req.GetPluginIdx()); err != nil {
		return reject(status.Errorf(codes.InvalidArgument, "plugin %s: %v", full, err))
	}

	if cfg.order == UpstreamOrder {
		p.r.spawn(func() {
			if err := p.configure(full); err != nil {
				p.finish(err)
				p.Close()
				return
			}
			p.synchronize()
		})
		return &api.Empty{}, nil
	}
	if err := p.configure(full); err != nil {
		return reject(err)
	}
	p.r.spawn(p.synchronize)
	return &api.Empty{}, nil
}

// UpdateContainers delivers the request to Updates.
func (rs *runtimeService) UpdateContainers(ctx context.Context, req *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	p := (*Plugin)(rs)
	select {
	case p.updates <- req:
		return &api.UpdateContainersResponse{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, errors.New("stubtest: connection closed")
	}
}

// requestContext bounds one of the runtime's requests.
func (p *Plugin) requestContext(d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		d = api.DefaultRequestTimeout
	}
	return context.WithTimeout(context.Background(), d)
}

// configure calls Configure and validates the answer, as a nrikit runtime
// does. The error is a status with the reason.
func (p *Plugin) configure(full string) error {
	cfg := &p.r.cfg
	req := &api.ConfigureRequest{
		Config:              cfg.pluginConfig,
		RuntimeName:         cfg.runtimeName,
		RuntimeVersion:      cfg.runtimeVersion,
		RegistrationTimeout: cfg.regTimeout.Milliseconds(),
		RequestTimeout:      cfg.reqTimeout.Milliseconds(),
		NRIVersion:          cfg.nriVersion,
		SupportedEvents:     int32(cfg.advertised),
		MaxRequestTimeout:   cfg.maxReqTimeout.Milliseconds(),
		SynchronizeTimeout:  cfg.syncTimeout.Milliseconds(),
	}
	if told := cfg.capabilities; told != nil {
		req.Capabilities = &api.CapabilitySet{Names: told.Names()}
	}
	p.mu.Lock()
	p.cfgReq = req
	p.mu.Unlock()
	ctx, cancel := p.requestContext(cfg.reqTimeout)
	defer cancel()
	rsp, err := p.plugin.Configure(ctx, req)
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "plugin %s rejected its configuration: %s", full, status.Convert(err).Message())
	}
	p.mu.Lock()
	p.cfgRsp = rsp
	p.mu.Unlock()

	accepted := cfg.accepted
	if accepted == 0 {
		accepted = api.AllEvents
	}
	events := api.EventMask(rsp.GetEvents())
	if events == 0 {
		events = accepted
	}
	if bad := events &^ accepted; bad != 0 {
		return status.Errorf(codes.InvalidArgument, "plugin %s subscribed to events this runtime does not support: %s (0x%x); supported: %s",
			full, bad, uint32(bad), accepted)
	}
	if told := cfg.capabilities; told != nil {
		want, unknown := capability.ParseSet(rsp.GetRequiredCapabilities())
		if missing := told.Missing(want); !missing.Empty() || len(unknown) > 0 {
			return status.Errorf(codes.FailedPrecondition, "plugin %s requires capabilities this runtime does not honour for it: %s (unknown: %q)",
				full, missing, unknown)
		}
	}
	p.mu.Lock()
	p.events = events
	p.mu.Unlock()
	return nil
}

// synchronize sends the runtime's state in parts and marks the plugin
// registered.
func (p *Plugin) synchronize() {
	pods, ctrs := p.r.state()
	cfg := &p.r.cfg
	chunk := cfg.syncChunk
	if chunk == 0 {
		chunk = len(pods) + len(ctrs) + 1
	}
	timeout := cfg.syncTimeout
	if timeout == 0 {
		timeout = cfg.reqTimeout
	}
	for {
		req := &api.SynchronizeRequest{}
		n := min(chunk, len(pods))
		req.Pods, pods = pods[:n], pods[n:]
		m := min(chunk-n, len(ctrs))
		req.Containers, ctrs = ctrs[:m], ctrs[m:]
		req.More = len(pods)+len(ctrs) > 0

		ctx, cancel := p.requestContext(timeout)
		rsp, err := p.plugin.Synchronize(ctx, req)
		cancel()
		if err != nil {
			p.finish(fmt.Errorf("synchronize: %w", err))
			p.Close()
			return
		}
		p.mu.Lock()
		p.syncParts++
		p.syncRsp = append(p.syncRsp, rsp)
		p.mu.Unlock()
		if req.More && (!rsp.GetMore() || len(rsp.GetUpdate()) > 0) {
			p.finish(errors.New("synchronize: intermediate part not answered with more=true and no updates"))
			p.Close()
			return
		}
		if !req.More {
			break
		}
	}
	p.regOnce.Do(func() { close(p.registered) })
}
