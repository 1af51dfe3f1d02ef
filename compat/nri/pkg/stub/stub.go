// Package stub is upstream's pkg/stub on nrikit's stub: a plugin's side of
// the protocol. A plugin written for upstream's stub builds unchanged and
// behaves as it does there where the plugin can see it:
//
//   - the handler interfaces are nrikit's, which have upstream's names
//     and methods;
//   - the name and index come from the environment (NRI_PLUGIN_NAME,
//     NRI_PLUGIN_IDX), then from the options in order: WithPluginName
//     overrides the name, WithPluginIdx fails if the index is set, and
//     the executable's name (IDX-NAME) supplies what is still missing;
//   - the WithOnClose hook runs before Run returns, and Run returns
//     ttrpc.ErrServerClosed when the runtime shuts the plugin down or the
//     connection is lost;
//   - UpdateContainers returns ErrNoService before the plugin is
//     connected;
//   - the stub's messages go to pkg/log's logger or WithLogger's.
//
// interop/compatstub runs one plugin built on upstream's module and on
// this one and compares these behaviours. New plugins use nrikit's stub
// directly (scopes, opt-outs, reconnection, in-process tests).
package stub

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	nrikit "github.com/nrikit/nrikit/stub"

	"github.com/containerd/nri/internal/logsink"
	nrilog "github.com/containerd/nri/pkg/log"
)

// EventMask is a set of events.
type EventMask = api.EventMask

// Defaults of the plugin's timeouts, until the runtime sets them.
const (
	DefaultRegistrationTimeout = api.DefaultRegistrationTimeout
	DefaultRequestTimeout      = api.DefaultRequestTimeout
)

// ErrNoService is returned by UpdateContainers while the plugin has no
// connection to the runtime (it was not started, or reconnects).
var ErrNoService = errors.New("stub: no service/connection")

// closeHookWait bounds how long Run waits for the WithOnClose hook to
// return.
const closeHookWait = 5 * time.Second

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
	// Logger returns the stub's logger.
	Logger() nrilog.Logger
	// RuntimeNRIVersion is the runtime's NRI version, "unknown" until
	// the runtime configured the plugin.
	RuntimeNRIVersion() string
	// PluginNRIVersion is the plugin's NRI version.
	PluginNRIVersion() string
}

// New creates a stub for plugin, which implements the handler interfaces
// of the events it handles.
func New(plugin any, opts ...Option) (Stub, error) {
	o := &options{
		name:   os.Getenv(api.PluginNameEnvVar),
		idx:    os.Getenv(api.PluginIdxEnvVar),
		logger: nrilog.Get(),
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if err := o.ensureIdentity(os.Args[0]); err != nil {
		return nil, err
	}
	s := &stub{logger: o.logger, onClose: o.onClose}
	// nrikit's stub takes the identity as resolved here, and a launched
	// plugin's socket as a given connection, so that the environment
	// does not take precedence over the options.
	native := []nrikit.Option{
		nrikit.WithPluginName(o.name),
		nrikit.WithPluginIdx(o.idx),
		nrikit.WithLogger(slog.New(logsink.NewHandler(o.logger))),
		nrikit.WithOnClose(s.closed),
	}
	conn, err := o.connection()
	if err != nil {
		return nil, err
	}
	if conn != nil {
		native = append(native, nrikit.WithConnection(conn))
	}
	s.Stub, err = nrikit.New(plugin, append(native, o.native...)...)
	if err != nil {
		if conn != nil && o.conn == nil {
			conn.Close()
		}
		return nil, err
	}
	return s, nil
}

type stub struct {
	*nrikit.Stub
	logger  nrilog.Logger
	onClose func()

	mu       sync.Mutex
	hookDone chan struct{} // closed when the last hook started returns
}

// closed is nrikit's OnClose hook: it starts the plugin's on a goroutine
// of its own, which may stop and wait for the stub (nrikit's hook runs
// before the stub's lifetime ends).
func (s *stub) closed(error) {
	if s.onClose == nil {
		return
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.hookDone = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.onClose()
	}()
}

// awaitHook waits, bounded, for the hook the ended connection started.
func (s *stub) awaitHook() {
	s.mu.Lock()
	done := s.hookDone
	s.hookDone = nil
	s.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(closeHookWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.logger.Warnf(context.Background(), "plugin %s: the OnClose hook has not returned after %v", s.Name(), closeHookWait)
	}
}

// Run starts the plugin and serves until it stops. When the runtime shut
// it down or the connection was lost, it returns ttrpc.ErrServerClosed
// (and logs nrikit's reason), as upstream's stub does.
func (s *stub) Run(ctx context.Context) error {
	err := s.Stub.Run(ctx)
	s.awaitHook()
	if errors.Is(err, nrikit.ErrShutdown) || errors.Is(err, nrikit.ErrConnectionLost) {
		s.logger.Infof(context.Background(), "ttrpc server closed %s : %v", s.Name(), err)
		return ttrpc.ErrServerClosed
	}
	return err
}

func (s *stub) Wait() { _ = s.Stub.Wait() }

func (s *stub) Logger() nrilog.Logger { return s.logger }

func (s *stub) RuntimeNRIVersion() string {
	if v := s.Stub.RuntimeNRIVersion(); v != "" {
		return v
	}
	return "unknown"
}

func (s *stub) UpdateContainers(u []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
	defer cancel()
	failed, err := s.Stub.UpdateContainers(ctx, u, nil)
	if errors.Is(err, nrikit.ErrNotStarted) || errors.Is(err, nrikit.ErrNotConnected) {
		return nil, ErrNoService
	}
	return failed, err
}
