package stub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/internal/socketpair"
)

// session is one connection to the runtime (an nriconn.Session): the
// multiplexed trunk, the ttrpc server of the Plugin service and the ttrpc
// client of the Runtime service. Its goroutines (the mux reader, ttrpc's
// own, and the server's Serve loop) end when close is called or the
// connection fails.
type session struct {
	c       *core
	sess    *nriconn.Session
	runtime api.RuntimeService
	disp    *dispatcher

	cfgC      chan error    // first Configure outcome
	shutdownC chan struct{} // closed after a Shutdown request was handled
	syncC     chan struct{} // closed when the first Synchronize arrives
	lostC     chan struct{} // closed when the connection failed
	cancel    context.CancelFunc

	// closing is set when close begins: from then on an answer that
	// cannot be written any more is dropped (see sessionConn).
	closing atomic.Bool
	// writeTimeout is the mux's current write timeout, for messages.
	writeTimeout atomic.Int64

	mu           sync.Mutex
	lostErr      error
	lostOnce     sync.Once
	shutdownOnce sync.Once
	syncOnce     sync.Once
	closeOnce    sync.Once
	stallOnce    sync.Once
}

// newSession sets up the protocol on conn, which it takes ownership of,
// and starts serving the Plugin service.
//
// Every write to the runtime is bounded (mux.WithWriteTimeout): by the
// registration timeout until the runtime has configured the plugin, then
// by the runtime's request timeout. A write that fails, because the
// runtime did not take it in time or the connection broke, ends the
// session (ttrpc cannot use a connection after a failed write anyway).
func newSession(c *core, conn net.Conn) (*session, error) {
	regTimeout := c.runtime().RegTimeout
	s := &session{
		c:         c,
		cfgC:      make(chan error, 1),
		shutdownC: make(chan struct{}),
		syncC:     make(chan struct{}),
		lostC:     make(chan struct{}),
	}
	s.writeTimeout.Store(int64(regTimeout))
	s.disp = newDispatcher(c)
	s.disp.onConfigured = func(err error) {
		// Configure told the stub the runtime's request timeout
		// (adopted even if the plugin's configuration failed).
		s.setWriteTimeout(c.p.RequestTimeout())
		select {
		case s.cfgC <- err:
		default: // only the first Configure matters
		}
	}
	s.disp.onShutdown = func() { s.shutdownOnce.Do(func() { close(s.shutdownC) }) }
	s.disp.onSynchronize = func() { s.syncOnce.Do(func() { close(s.syncC) }) }
	s.disp.gc = &syncGC{percent: int(c.syncGCPercent.Load())}

	ctx, cancel := context.WithCancel(context.Background())
	// Init keeps the session before it serves: the handlers use it.
	_, err := nriconn.Open(conn, nriconn.PluginRole, nriconn.Config{
		WriteTimeout:  regTimeout,
		ServerOptions: c.cfg.serverOptions(),
		ClientOptions: c.cfg.clientOpts,
		Init:          func(ns *nriconn.Session) { s.sess = ns },
		ClientConn:    func(rc net.Conn) net.Conn { return &sessionConn{Conn: rc, s: s} },
		ServerConn:    func(pc net.Conn) net.Conn { return &sessionConn{Conn: pc, s: s, answers: true} },
		Register: func(ns *nriconn.Session) {
			api.RegisterPluginService(ns.Server, s.disp)
			s.runtime = api.NewRuntimeClient(ns.Client)
		},
		ClientClosed: func() { s.markLost(errors.New("ttrpc client closed")) },
		Served:       func(err error) { s.markLost(fmt.Errorf("ttrpc server: %w", err)) },
		Context:      ctx,
	})
	if err != nil {
		cancel()
		if errors.Is(err, nriconn.ErrEnded) {
			// The runtime closed the connection at once (as one that
			// refuses a connection does): lost, as a close a moment
			// later would be.
			return nil, lostError(" during registration", err)
		}
		return nil, fmt.Errorf("stub: %w", err)
	}
	s.cancel = cancel
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
//
// The order matters for what ttrpc logs. closing is set first, so that
// an answer still being written when the connection goes is dropped
// (see sessionConn). Then the session closes the trunk first
// (nriconn.Session.Close), which ends everything: the server's
// connection and the client read what had arrived, then EOF, and end, as
// ttrpc expects of a peer that went away; Serve's listener fails.
// Closing ttrpc's client or server first would stop their readers while
// a message may be under way, which they log as errors: the client an
// answer to a call it has given up ("received message on inactive
// stream"), the server a reader stopped without a reason ("error
// receiving message").
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.sess.Close()
		s.cancel()
		s.disp.gc.end() // if the connection ended while synchronizing
	})
}

// cause returns why the connection failed. It is meaningful after close.
func (s *session) cause() error {
	if err := s.sess.Err(); err != nil && !errors.Is(err, mux.ErrClosed) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostErr != nil {
		return s.lostErr
	}
	return errors.New("connection closed")
}

// setWriteTimeout bounds the writes to the runtime from now on.
func (s *session) setWriteTimeout(d time.Duration) {
	s.writeTimeout.Store(int64(d))
	s.sess.Mux.SetWriteTimeout(d)
}

// writeFailed is called when a write to the runtime failed: unless the
// session is closing, the connection is lost. A runtime that did not take
// the write within the write timeout (it stopped reading) is logged once.
func (s *session) writeFailed(what string, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.stallOnce.Do(func() {
			s.c.log.Warn("runtime did not take the plugin's data within the write timeout; closing the connection",
				"plugin", s.c.name, "writing", what, "timeout", time.Duration(s.writeTimeout.Load()), "error", err)
		})
	}
	if !s.closing.Load() {
		s.markLost(fmt.Errorf("writing %s to the runtime: %w", what, err))
	}
}

// sessionConn is a logical connection of a session, as ttrpc sees it. A
// failed write ends the session (writeFailed). On the connection the
// Plugin service is served on (answers), the end of the connection is
// then reported to ttrpc as a clean one: a failed write as done (the
// answer is lost with the connection) and a failed read as io.EOF. The
// stub reports why the connection ended itself ([Stub.Wait],
// [WithOnClose], its logger); ttrpc's server would otherwise log every
// answer under way when the connection went, and every end of the
// connection other than a clean EOF, as an error, through a logger the
// plugin does not control. On the Runtime service connection errors are
// returned as they are: to the caller of the request, and ttrpc's client
// does not log them.
type sessionConn struct {
	net.Conn
	s       *session
	answers bool
}

// Read implements net.Conn.
func (c *sessionConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == nil || !c.answers || errors.Is(err, io.EOF) {
		return n, err
	}
	if !c.s.closing.Load() {
		c.s.markLost(fmt.Errorf("reading from the runtime: %w", err))
	}
	return n, io.EOF
}

// Write implements net.Conn.
func (c *sessionConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil {
		return n, nil
	}
	if !c.answers {
		c.s.writeFailed("a request", err)
		return n, err
	}
	c.s.writeFailed("an answer", err)
	return len(p), nil
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
