package stub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/containerd/ttrpc"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/mux"
	"github.com/nrikit/nrikit/socketpair"
)

// session is one connection to the runtime: the multiplexed trunk, the
// ttrpc server of the Plugin service and the ttrpc client of the Runtime
// service. Its goroutines (the mux reader, ttrpc's own, and the server's
// Serve loop) end when close is called or the connection fails.
type session struct {
	mux     *mux.Mux
	server  *ttrpc.Server
	client  *ttrpc.Client
	runtime api.RuntimeService
	disp    *dispatcher

	cfgC      chan error    // first Configure outcome
	shutdownC chan struct{} // closed after a Shutdown request was handled
	syncC     chan struct{} // closed when the first Synchronize arrives
	lostC     chan struct{} // closed when the connection failed
	serveDone chan struct{} // closed when Serve returned
	cancel    context.CancelFunc

	mu           sync.Mutex
	lostErr      error
	lostOnce     sync.Once
	shutdownOnce sync.Once
	syncOnce     sync.Once
	closeOnce    sync.Once
}

// newSession sets up the protocol on conn, which it takes ownership of,
// and starts serving the Plugin service.
func newSession(c *core, conn net.Conn) (*session, error) {
	lay, err := nriconn.New(conn, nriconn.PluginRole, nil, c.cfg.serverOptions()...)
	if err != nil {
		return nil, fmt.Errorf("stub: %w", err)
	}
	m, l, rc, srv := lay.Mux, lay.Listener, lay.ClientConn, lay.Server
	s := &session{
		mux:       m,
		server:    srv,
		cfgC:      make(chan error, 1),
		shutdownC: make(chan struct{}),
		syncC:     make(chan struct{}),
		lostC:     make(chan struct{}),
		serveDone: make(chan struct{}),
	}
	s.disp = &dispatcher{
		c: c,
		onConfigured: func(err error) {
			select {
			case s.cfgC <- err:
			default: // only the first Configure matters
			}
		},
		onShutdown:    func() { s.shutdownOnce.Do(func() { close(s.shutdownC) }) },
		onSynchronize: func() { s.syncOnce.Do(func() { close(s.syncC) }) },
	}
	s.disp.sync.gc = &syncGC{percent: int(c.syncGCPercent.Load())}
	api.RegisterPluginService(srv, s.disp)

	// Our close hook goes last: ttrpc keeps only one.
	opts := append(append([]ttrpc.ClientOpts{}, c.cfg.clientOpts...),
		ttrpc.WithOnClose(func() { s.markLost(errors.New("ttrpc client closed")) }))
	s.client = ttrpc.NewClient(rc, opts...)
	s.runtime = api.NewRuntimeClient(s.client)

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.serveDone)
		err := srv.Serve(ctx, l)
		s.markLost(fmt.Errorf("ttrpc server: %w", err))
	}()
	return s, nil
}

// synchronizing reports whether the runtime has begun to synchronize the
// plugin, which means it accepted the registration.
func (s *session) synchronizing() bool {
	select {
	case <-s.syncC:
		return true
	default:
		return false
	}
}

// markLost records that the connection failed.
func (s *session) markLost(err error) {
	s.lostOnce.Do(func() {
		s.mu.Lock()
		s.lostErr = err
		s.mu.Unlock()
		close(s.lostC)
	})
}

// close tears the session down and waits for its Serve loop. Handlers
// that are still running finish on their own; their answers are lost.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.server.Close()
		s.client.Close()
		s.mux.Close()
		s.cancel()
		<-s.serveDone
		s.disp.sync.gc.end() // if the connection ended while synchronizing
	})
}

// cause returns why the connection failed. It is meaningful after close.
func (s *session) cause() error {
	if err := s.mux.Err(); err != nil && !errors.Is(err, mux.ErrClosed) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostErr != nil {
		return s.lostErr
	}
	return errors.New("connection closed")
}

// lostError is the error reporting a lost connection.
func lostError(during string, cause error) error {
	return fmt.Errorf("stub: %w%s: %w", ErrConnectionLost, during, cause)
}

// connect returns a new connection to the runtime.
func (st *Stub) connect(timeout time.Duration) (net.Conn, error) {
	switch st.id.source {
	case givenConn, inheritedFD:
		st.mu.Lock()
		used := st.connUsed
		st.connUsed = true
		st.mu.Unlock()
		if used {
			return nil, fmt.Errorf("stub: the %s was already used; it cannot be used again", st.id.source)
		}
		if st.id.source == givenConn {
			return st.c.cfg.conn, nil
		}
		conn, err := socketpair.FileConn(st.id.fd)
		if err != nil {
			return nil, fmt.Errorf("stub: using %s=%d: %w", api.PluginSocketEnvVar, st.id.fd, err)
		}
		return conn, nil
	}
	path := st.c.cfg.socketPath
	var (
		conn net.Conn
		err  error
	)
	if dial := st.c.cfg.dialer; dial != nil {
		conn, err = dial(path)
	} else {
		d := net.Dialer{Timeout: timeout}
		conn, err = d.Dial("unix", path)
	}
	if err != nil {
		return nil, fmt.Errorf("stub: connecting to the runtime at %s: %w", path, err)
	}
	return conn, nil
}
