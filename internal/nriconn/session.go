package nriconn

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/internal/mux"
)

// Config is how Open sets a session up. The zero value is a session
// without bounds on writes and nothing served.
type Config struct {
	// WriteTimeout bounds every write to the peer (mux.WithWriteTimeout;
	// 0: unbounded): a peer that stops reading fails the write instead
	// of blocking it for ever.
	WriteTimeout time.Duration
	// MuxOptions are applied after the connection IDs and WriteTimeout.
	MuxOptions []mux.Option
	// ServerOptions configure the ttrpc server.
	ServerOptions []ttrpc.ServerOpt
	// ClientOptions configure the ttrpc client.
	ClientOptions []ttrpc.ClientOpts
	// Init, if set, is called first, with the session's Mux and Server
	// set (to set read limits, or keep the session).
	Init func(*Session)
	// ClientConn, if set, wraps the logical connection the client uses
	// (to follow or bound what the peer sends on it).
	ClientConn func(net.Conn) net.Conn
	// ServerConn, if set, wraps the logical connection the server serves
	// (to follow what the peer sends on it, or to see the answers
	// written).
	ServerConn func(net.Conn) net.Conn
	// Register, if set, is called once the Client is set too, before
	// the server serves: it registers this side's service on s.Server.
	Register func(s *Session)
	// ClientClosed, if set, is called when the client has closed: the
	// connection ended, or Close closed it.
	ClientClosed func()
	// Served, if set, is called with the server's error when it stops
	// serving: the connection ended, or Close closed it.
	Served func(error)
	// Context is the context the server serves with (Background if nil):
	// the requests it serves have contexts derived from it. The server
	// stops with Close, not with it.
	Context context.Context
}

// Session is one side of an NRI connection, running: the multiplexer,
// the ttrpc client of the peer's service and this side's ttrpc server,
// serving on a goroutine the session owns until Close.
type Session struct {
	// Mux multiplexes the socket; it is closed by Close, or when the
	// peer goes away.
	Mux *mux.Mux
	// Client calls the peer's service.
	Client *ttrpc.Client
	// Server serves this side's service.
	Server *ttrpc.Server

	clientDone chan struct{} // closed when the client has ended
	serving    sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

// Open sets the NRI connection layout for role up on conn (see New), with
// cfg's limits and wrappers, and starts serving. It takes ownership of
// conn: on error conn is closed.
func Open(conn net.Conn, role Role, cfg Config) (*Session, error) {
	var muxOpts []mux.Option
	if cfg.WriteTimeout > 0 {
		muxOpts = append(muxOpts, mux.WithWriteTimeout(cfg.WriteTimeout))
	}
	lay, err := New(conn, role, append(muxOpts, cfg.MuxOptions...), cfg.ServerOptions...)
	if err != nil {
		return nil, err
	}
	s := &Session{Mux: lay.Mux, Server: lay.Server, clientDone: make(chan struct{})}
	if cfg.Init != nil {
		cfg.Init(s)
	}
	cc := lay.ClientConn
	if cfg.ClientConn != nil {
		cc = cfg.ClientConn(cc)
	}
	// The session's close hook goes last: ttrpc keeps only one.
	copts := append(slices.Clip(cfg.ClientOptions), ttrpc.WithOnClose(func() {
		if cfg.ClientClosed != nil {
			cfg.ClientClosed()
		}
		close(s.clientDone)
	}))
	s.Client = ttrpc.NewClient(cc, copts...)
	if cfg.Register != nil {
		cfg.Register(s)
	}
	l := lay.Listener
	if cfg.ServerConn != nil {
		l = &wrapListener{Listener: l, wrap: cfg.ServerConn}
	}
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		err := s.Server.Serve(ctx, l)
		if cfg.Served != nil {
			cfg.Served(err)
		}
	}()
	return s, nil
}

// wrapListener yields the connections of its listener wrapped.
type wrapListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

// Accept implements net.Listener.
func (l *wrapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// Done is closed when the connection is gone.
func (s *Session) Done() <-chan struct{} { return s.Mux.Done() }

// Err says why the connection is gone (nil while it is not).
func (s *Session) Err() error { return s.Mux.Err() }

// clientGrace bounds Close's wait for the client to read the end of the
// connection.
const clientGrace = 5 * time.Second

// Close tears the session down and returns once the server goroutine has
// ended. The socket is closed first, so that the client and the server
// end as they do when the peer goes away (closing them first makes ttrpc
// log the messages under way as errors); then the client (once it has
// seen the end, for at most a few seconds) and the server are closed. It
// is idempotent and returns the multiplexer's close error.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.Mux.Close()
		t := time.NewTimer(clientGrace)
		select {
		case <-s.clientDone:
		case <-t.C:
		}
		t.Stop()
		s.Client.Close()
		s.Server.Close()
		s.serving.Wait()
	})
	return s.closeErr
}
