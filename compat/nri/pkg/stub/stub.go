// Package stub is upstream's pkg/stub on nrikit's stub: a plugin's side of
// the protocol. The handler interfaces are nrikit's, which have
// upstream's method signatures, so a plugin written for upstream's stub
// is found to implement the same events. New plugins use nrikit's stub
// directly (scopes, opt-outs, reconnection, in-process tests).
//
// Not provided: WithLogger (a plugin's messages go to nrikit's stub
// logger, not to pkg/log's) and the WASM plugin support.
package stub

import (
	"context"
	"net"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	nrikit "github.com/nrikit/nrikit/stub"
)

// EventMask is a set of events.
type EventMask = api.EventMask

// Defaults of the plugin's timeouts, until the runtime sets them.
const (
	DefaultRegistrationTimeout = api.DefaultRegistrationTimeout
	DefaultRequestTimeout      = api.DefaultRequestTimeout
)

// Stub is a plugin's connection to the runtime.
type Stub interface {
	// Run starts the plugin and waits for it to stop.
	Run(context.Context) error
	// Start connects, registers and starts serving the runtime.
	Start(context.Context) error
	// Stop stops the plugin.
	Stop()
	// Wait waits for the plugin to stop.
	Wait()
	// UpdateContainers asks the runtime to update containers.
	UpdateContainers([]*api.ContainerUpdate) ([]*api.ContainerUpdate, error)
	// RegistrationTimeout is the runtime's registration timeout.
	RegistrationTimeout() time.Duration
	// RequestTimeout is the runtime's request timeout.
	RequestTimeout() time.Duration
	// RuntimeNRIVersion is the runtime's NRI version.
	RuntimeNRIVersion() string
	// PluginNRIVersion is the plugin's NRI version.
	PluginNRIVersion() string
}

// Option configures a stub.
type Option = nrikit.Option

// WithPluginName sets the plugin's name.
func WithPluginName(name string) Option { return nrikit.WithPluginName(name) }

// WithPluginIdx sets the plugin's index.
func WithPluginIdx(idx string) Option { return nrikit.WithPluginIdx(idx) }

// WithSocketPath sets the runtime's socket.
func WithSocketPath(path string) Option { return nrikit.WithSocketPath(path) }

// WithConnection uses conn to reach the runtime.
func WithConnection(conn net.Conn) Option { return nrikit.WithConnection(conn) }

// WithDialer dials the runtime with d.
func WithDialer(d func(string) (net.Conn, error)) Option { return nrikit.WithDialer(d) }

// WithTTRPCOptions adds ttrpc client and server options.
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return nrikit.WithTTRPCOptions(clientOpts, serverOpts)
}

// WithFailurePolicy asks the runtime for a failure policy.
func WithFailurePolicy(policy *api.FailurePolicy) Option { return nrikit.WithFailurePolicy(policy) }

// WithOnClose calls onClose when the connection to the runtime ends,
// lost or closed by Stop. As upstream's stub does, neither Stop nor Wait
// waits for onClose to return, so onClose may itself stop the plugin and
// wait for it (CRI-O's NRI test plugins do, under a sync.Once that the
// caller of Stop holds): it runs on a goroutine of its own, which ends
// when onClose returns.
func WithOnClose(onClose func()) Option {
	if onClose == nil {
		onClose = func() {}
	}
	return nrikit.WithOnClose(func(error) { go onClose() })
}

// New creates a stub for plugin, which implements the handler interfaces
// of the events it handles.
func New(plugin any, opts ...Option) (Stub, error) {
	s, err := nrikit.New(plugin, opts...)
	if err != nil {
		return nil, err
	}
	return &stub{s}, nil
}

type stub struct{ *nrikit.Stub }

func (s *stub) Wait() { _ = s.Stub.Wait() }

func (s *stub) UpdateContainers(u []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
	defer cancel()
	return s.Stub.UpdateContainers(ctx, u, nil)
}
