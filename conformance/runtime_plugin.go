package conformance

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
)

// syncSummary is what a complete Synchronize (all its parts) carried.
type syncSummary struct {
	parts, pods, containers int
}

// probePlugin is the Plugin service the runtime checker serves: it reports
// Configure and Synchronize on channels, subscribes to a fixed mask and
// answers every event with an empty answer.
type probePlugin struct {
	// UnimplementedPluginService answers the events the protocol gains
	// after the probe was written (it answers every event it knows).
	api.UnimplementedPluginService

	events int32

	configured chan *api.ConfigureRequest
	synced     chan syncSummary
	shutdown   chan struct{}

	mu           sync.Mutex
	sync         syncSummary
	shutdownOnce sync.Once
}

func newProbePlugin(events int32) *probePlugin {
	return &probePlugin{
		events:     events,
		configured: make(chan *api.ConfigureRequest, 1),
		synced:     make(chan syncSummary, 1),
		shutdown:   make(chan struct{}),
	}
}

// Configure reports the request and subscribes.
func (p *probePlugin) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	select {
	case p.configured <- req:
	default:
	}
	return &api.ConfigureResponse{Events: p.events}, nil
}

// Synchronize collects the parts and reports the complete state.
func (p *probePlugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	p.mu.Lock()
	p.sync.parts++
	p.sync.pods += len(req.GetPods())
	p.sync.containers += len(req.GetContainers())
	done := p.sync
	if !req.GetMore() {
		p.sync = syncSummary{}
	}
	p.mu.Unlock()
	if req.GetMore() {
		return &api.SynchronizeResponse{More: true}, nil
	}
	select {
	case p.synced <- done:
	default:
	}
	return &api.SynchronizeResponse{}, nil
}

// Shutdown reports the call.
func (p *probePlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	p.shutdownOnce.Do(func() { close(p.shutdown) })
	return &api.Empty{}, nil
}

// RunPodSandbox answers without changes.
func (p *probePlugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox answers without changes.
func (p *probePlugin) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox answers.
func (p *probePlugin) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox answers.
func (p *probePlugin) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox answers.
func (p *probePlugin) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return &api.RemovePodSandboxResponse{}, nil
}

// CreateContainer answers without an adjustment.
func (p *probePlugin) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return &api.CreateContainerResponse{}, nil
}

// PostCreateContainer answers.
func (p *probePlugin) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer answers.
func (p *probePlugin) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer answers.
func (p *probePlugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer answers without changes.
func (p *probePlugin) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return &api.UpdateContainerResponse{}, nil
}

// PostUpdateContainer answers.
func (p *probePlugin) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer answers without updates.
func (p *probePlugin) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return &api.StopContainerResponse{}, nil
}

// RemoveContainer answers.
func (p *probePlugin) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return &api.RemoveContainerResponse{}, nil
}

// StateChange answers.
func (p *probePlugin) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment accepts.
func (p *probePlugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return &api.ValidateContainerAdjustmentResponse{}, nil
}

// runtimeSession is the checker's plugin end of a connection to a
// runtime (nriconn.Session in the plugin's role).
type runtimeSession struct {
	sess    *nriconn.Session
	mux     *mux.Mux
	runtime api.RuntimeService
	plugin  *probePlugin
}

// dialRuntime connects to the runtime's socket and serves p on the
// connection. Every write to the runtime is bounded by writeTimeout, so
// that a runtime that stops reading cannot hang the check.
func dialRuntime(ctx context.Context, socketPath string, p *probePlugin, writeTimeout time.Duration) (*runtimeSession, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", socketPath, err)
	}
	sess, err := nriconn.Open(conn, nriconn.PluginRole, nriconn.Config{
		WriteTimeout: writeTimeout,
		Register:     func(s *nriconn.Session) { api.RegisterPluginService(s.Server, p) },
	})
	if err != nil {
		return nil, err
	}
	return &runtimeSession{sess: sess, mux: sess.Mux, runtime: api.NewRuntimeClient(sess.Client), plugin: p}, nil
}

// close tears the connection down and waits for the server goroutine.
func (s *runtimeSession) close() { _ = s.sess.Close() }
