package cri

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/nriconn"
)

// event is one request the runtime sent a check's plugin about a pod or
// container of the check.
type event struct {
	Kind api.Event
	Pod  *api.PodSandbox
	Ctr  *api.Container
	// Resources are the resources an UpdateContainer or UpdatePodSandbox
	// request carries.
	Resources *api.LinuxResources
	// Seq orders the events of every plugin of one check.
	Seq int
	At  time.Time
}

// answer is what a handler tells the runtime about a container event.
type answer struct {
	adjust *api.ContainerAdjustment
	update []*api.ContainerUpdate
	evict  []*api.ContainerEviction
}

// handler decides a plugin's answer to an event of the check. It runs on
// the connection's server goroutine: ctx ends when the runtime's request
// timeout passes or the check ends. A nil answer is an empty one.
type handler func(ctx context.Context, ev *event) (*answer, error)

// pluginSpec says how a check's plugin behaves.
type pluginSpec struct {
	// Idx is the plugin's index (default "50").
	Idx string
	// Name distinguishes plugins of one check (default "p").
	Name string
	// Events are the plugin's subscription.
	Events []api.Event
	// Handle answers the check's events; nil answers every one empty.
	Handle handler
	// OnSync, if set, is called with the Synchronize request's pods and
	// containers of the whole node before the plugin answers it (on the
	// last part); it may hold the answer.
	OnSync func(ctx context.Context, pods []*api.PodSandbox, ctrs []*api.Container)
}

// plugin is one plugin connection of a check. It answers events about
// pods and containers that are not the check's at once and empty, so
// that it never touches the node's other workloads.
type plugin struct {
	// UnimplementedPluginService answers, for pluginService, the events
	// the protocol gains after the checks were written (a check never
	// subscribes to them).
	api.UnimplementedPluginService

	full   string
	mask   api.EventMask
	spec   pluginSpec
	owns   func(*api.PodSandbox, *api.Container) bool
	seq    *sequence
	sess   *nriconn.Session
	rt     api.RuntimeService
	ctx    context.Context // ends when the plugin is closed
	cancel context.CancelFunc

	configured chan *api.ConfigureRequest
	synced     chan syncState

	mu       sync.Mutex
	events   []*event
	changed  chan struct{} // closed and replaced at every event
	syncPods []*api.PodSandbox
	syncCtrs []*api.Container
	lastSync syncState // the Synchronize register saw
}

// syncState is what a complete Synchronize carried.
type syncState struct {
	pods []*api.PodSandbox
	ctrs []*api.Container
}

// sequence numbers the events of one check across its plugins.
type sequence struct {
	mu sync.Mutex
	n  int
}

func (s *sequence) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return s.n
}

// dialPlugin connects a plugin to the runtime's NRI socket and serves it;
// it does not register it.
func dialPlugin(ctx context.Context, socket, full string, spec pluginSpec, owns func(*api.PodSandbox, *api.Container) bool, seq *sequence, writeTimeout time.Duration) (*plugin, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("connecting to the NRI socket %s: %w", socket, err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &plugin{
		full: full, mask: api.MaskOf(spec.Events...), spec: spec, owns: owns, seq: seq,
		ctx: pctx, cancel: cancel,
		configured: make(chan *api.ConfigureRequest, 1),
		synced:     make(chan syncState, 1),
		changed:    make(chan struct{}),
	}
	sess, err := nriconn.Open(conn, nriconn.PluginRole, nriconn.Config{
		WriteTimeout: writeTimeout,
		Register:     func(s *nriconn.Session) { api.RegisterPluginService(s.Server, (*pluginService)(p)) },
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("NRI connection: %w", err)
	}
	p.sess, p.rt = sess, api.NewRuntimeClient(sess.Client)
	return p, nil
}

// register registers the plugin and waits until the runtime has
// synchronized it. The returned Configure request is the runtime's.
func (p *plugin) register(ctx context.Context, timeout time.Duration) (*api.ConfigureRequest, error) {
	idx, name, err := api.ParsePluginName(p.full)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A nrikit runtime answers RegisterPlugin only after Configure, which
	// the session serves meanwhile.
	registered := make(chan error, 1)
	go func() {
		_, err := p.rt.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: name, PluginIdx: idx, NRIVersion: api.NRIVersion})
		registered <- err
	}()
	var conf *api.ConfigureRequest
	for regDone := false; !regDone || conf == nil; {
		select {
		case err := <-registered:
			if err != nil {
				return nil, fmt.Errorf("registering %s: %w", p.full, err)
			}
			regDone = true
		case conf = <-p.configured:
		case <-p.sess.Done():
			return nil, fmt.Errorf("registering %s: the runtime closed the connection: %v", p.full, p.sess.Err())
		case <-ctx.Done():
			return nil, fmt.Errorf("registering %s: no answer within %s", p.full, timeout)
		}
	}
	select {
	case st := <-p.synced:
		p.mu.Lock()
		p.lastSync = st
		p.mu.Unlock()
	case <-p.sess.Done():
		return nil, fmt.Errorf("%s: the runtime closed the connection before Synchronize: %v", p.full, p.sess.Err())
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no Synchronize within %s of registering", p.full, timeout)
	}
	// The runtime adds the plugin to its list after its Synchronize
	// answer; an event of this moment could still miss it.
	time.Sleep(syncSettle)
	return conf, nil
}

// syncSettle is how long a registered plugin waits after its Synchronize
// answer before its check goes on.
const syncSettle = 50 * time.Millisecond

// synchronized returns the Synchronize the plugin registered with.
func (p *plugin) synchronized() syncState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastSync
}

// close ends the connection and releases any handler still holding.
func (p *plugin) close() {
	p.cancel()
	_ = p.sess.Close()
}

// closed returns a channel closed when the connection has ended.
func (p *plugin) closed() <-chan struct{} { return p.sess.Done() }

// record adds an event of the check.
func (p *plugin) record(ev *event) {
	ev.Seq, ev.At = p.seq.next(), time.Now()
	p.mu.Lock()
	p.events = append(p.events, ev)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// seen returns the events of the check so far.
func (p *plugin) seen() []*event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*event(nil), p.events...)
}

// wait waits until an event matching match has been recorded and
// returns the first one.
func (p *plugin) wait(ctx context.Context, match func(*event) bool) (*event, error) {
	for {
		p.mu.Lock()
		for _, ev := range p.events {
			if match(ev) {
				p.mu.Unlock()
				return ev, nil
			}
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// handle records an event and asks the handler for the answer, unless
// the event is not about the check's objects.
func (p *plugin) handle(ctx context.Context, kind api.Event, pod *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) (*answer, error) {
	if !p.owns(pod, ctr) {
		return nil, nil
	}
	ev := &event{Kind: kind, Pod: pod, Ctr: ctr, Resources: res}
	p.record(ev)
	if p.spec.Handle == nil {
		return nil, nil
	}
	// The handler stops when the runtime gives up or the check ends.
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	a, err := p.spec.Handle(hctx, ev)
	if a == nil {
		a = &answer{}
	}
	return a, err
}

// pluginService is the plugin's NRI service.
type pluginService plugin

func (s *pluginService) p() *plugin { return (*plugin)(s) }

// Configure reports the request and subscribes.
func (s *pluginService) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	select {
	case s.configured <- req:
	default:
	}
	return &api.ConfigureResponse{Events: int32(s.mask)}, nil
}

// Synchronize collects the parts and reports the complete state.
func (s *pluginService) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	s.mu.Lock()
	s.syncPods = append(s.syncPods, req.GetPods()...)
	s.syncCtrs = append(s.syncCtrs, req.GetContainers()...)
	st := syncState{pods: s.syncPods, ctrs: s.syncCtrs}
	if !req.GetMore() {
		s.syncPods, s.syncCtrs = nil, nil
	}
	s.mu.Unlock()
	if req.GetMore() {
		return &api.SynchronizeResponse{More: true}, nil
	}
	if s.spec.OnSync != nil {
		hctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.ctx, cancel)
		s.spec.OnSync(hctx, st.pods, st.ctrs)
		stop()
		cancel()
	}
	select {
	case s.synced <- st:
	default:
	}
	return &api.SynchronizeResponse{}, nil
}

// Shutdown answers.
func (s *pluginService) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// RunPodSandbox relays to the handler.
func (s *pluginService) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	_, err := s.p().handle(ctx, api.Event_RUN_POD_SANDBOX, req.GetPod(), nil, nil)
	return &api.RunPodSandboxResponse{}, err
}

// UpdatePodSandbox relays to the handler.
func (s *pluginService) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	_, err := s.p().handle(ctx, api.Event_UPDATE_POD_SANDBOX, req.GetPod(), nil, req.GetLinuxResources())
	return &api.UpdatePodSandboxResponse{}, err
}

// PostUpdatePodSandbox relays to the handler.
func (s *pluginService) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	_, err := s.p().handle(ctx, api.Event_POST_UPDATE_POD_SANDBOX, req.GetPod(), nil, nil)
	return &api.PostUpdatePodSandboxResponse{}, err
}

// StopPodSandbox relays to the handler.
func (s *pluginService) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	_, err := s.p().handle(ctx, api.Event_STOP_POD_SANDBOX, req.GetPod(), nil, nil)
	return &api.StopPodSandboxResponse{}, err
}

// RemovePodSandbox relays to the handler.
func (s *pluginService) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	_, err := s.p().handle(ctx, api.Event_REMOVE_POD_SANDBOX, req.GetPod(), nil, nil)
	return &api.RemovePodSandboxResponse{}, err
}

// CreateContainer relays to the handler, whose adjustment, updates and
// evictions are the answer.
func (s *pluginService) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	a, err := s.p().handle(ctx, api.Event_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	if err != nil || a == nil {
		return &api.CreateContainerResponse{}, err
	}
	return &api.CreateContainerResponse{Adjust: a.adjust, Update: a.update, Evict: a.evict}, nil
}

// PostCreateContainer relays to the handler.
func (s *pluginService) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	_, err := s.p().handle(ctx, api.Event_POST_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	return &api.PostCreateContainerResponse{}, err
}

// StartContainer relays to the handler.
func (s *pluginService) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	_, err := s.p().handle(ctx, api.Event_START_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	return &api.StartContainerResponse{}, err
}

// PostStartContainer relays to the handler.
func (s *pluginService) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	_, err := s.p().handle(ctx, api.Event_POST_START_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	return &api.PostStartContainerResponse{}, err
}

// UpdateContainer relays to the handler, whose updates and evictions are
// the answer.
func (s *pluginService) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	a, err := s.p().handle(ctx, api.Event_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
	if err != nil || a == nil {
		return &api.UpdateContainerResponse{}, err
	}
	return &api.UpdateContainerResponse{Update: a.update, Evict: a.evict}, nil
}

// PostUpdateContainer relays to the handler.
func (s *pluginService) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	_, err := s.p().handle(ctx, api.Event_POST_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	return &api.PostUpdateContainerResponse{}, err
}

// StopContainer relays to the handler, whose updates are the answer.
func (s *pluginService) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	a, err := s.p().handle(ctx, api.Event_STOP_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	if err != nil || a == nil {
		return &api.StopContainerResponse{}, err
	}
	return &api.StopContainerResponse{Update: a.update}, nil
}

// RemoveContainer relays to the handler.
func (s *pluginService) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	_, err := s.p().handle(ctx, api.Event_REMOVE_CONTAINER, req.GetPod(), req.GetContainer(), nil)
	return &api.RemoveContainerResponse{}, err
}

// StateChange relays to the handler: runtimes on NRI before v0.12 (CRI-O
// v1.36) send the pod events and the container events that carry no
// answer this way.
func (s *pluginService) StateChange(ctx context.Context, req *api.StateChangeEvent) (*api.Empty, error) {
	_, err := s.p().handle(ctx, req.GetEvent(), req.GetPod(), req.GetContainer(), nil)
	return &api.Empty{}, err
}

// ValidateContainerAdjustment accepts.
func (s *pluginService) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
