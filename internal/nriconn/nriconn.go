// Package nriconn sets up NRI's connection layout on one socket, for either
// side: the multiplexer, the logical connection on which this side is the
// ttrpc client, the listener on which it serves, and its ttrpc server.
//
// The runtime is the client of the Plugin service on connection 1 and
// serves the Runtime service on connection 2; the plugin is the other way
// round (docs/protocol.md, sections 1 and 3).
package nriconn

import (
	"errors"
	"fmt"
	"net"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/internal/mux"
)

// Role is the side of the connection a Layout is for.
type Role int

const (
	// RuntimeRole serves the Runtime service and calls the Plugin service.
	RuntimeRole Role = iota
	// PluginRole serves the Plugin service and calls the Runtime service.
	PluginRole
)

// Layout is one side of an NRI connection. Register the side's service on
// Server, run Server.Serve(ctx, Listener), and create the ttrpc client for
// the peer's service on ClientConn. Closing Mux closes everything.
type Layout struct {
	// Mux multiplexes the socket.
	Mux *mux.Mux
	// Server serves this side's service; nothing is registered yet.
	Server *ttrpc.Server
	// Listener yields the logical connection Server serves.
	Listener net.Listener
	// ClientConn is the logical connection for the ttrpc client of the
	// peer's service.
	ClientConn net.Conn
}

// ErrEnded is wrapped by the error of New (and Open) when the connection
// had ended before the layout was set up: the peer closed it at once,
// or it broke. The error also wraps the multiplexer's cause, such as
// io.EOF. For a side this is the peer's doing, and the same as an end a
// moment later.
var ErrEnded = errors.New("connection ended before it was set up")

// New sets the layout for role up on conn, which it takes ownership of: on
// error conn is closed. The multiplexer carries connections 1 and 2 only
// (a frame for another ID fails it, see mux.WithConnIDs), with muxOpts
// applied after that.
func New(conn net.Conn, role Role, muxOpts []mux.Option, serverOpts ...ttrpc.ServerOpt) (*Layout, error) {
	serve, call := mux.RuntimeServiceConn, mux.PluginServiceConn
	if role == PluginRole {
		serve, call = call, serve
	}
	opts := append([]mux.Option{mux.WithConnIDs(mux.PluginServiceConn, mux.RuntimeServiceConn)}, muxOpts...)
	m, err := mux.New(conn, opts...)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("multiplexing the connection: %w", err)
	}
	l, err := m.Listen(serve)
	if err != nil {
		return nil, closeEnded(m, fmt.Errorf("listening on connection %d: %w", serve, err))
	}
	cc, err := m.Open(call)
	if err != nil {
		return nil, closeEnded(m, fmt.Errorf("opening connection %d: %w", call, err))
	}
	srv, err := ttrpc.NewServer(serverOpts...)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("creating the ttrpc server: %w", err)
	}
	return &Layout{Mux: m, Server: srv, Listener: l, ClientConn: cc}, nil
}

// closeEnded closes m, which failed to open a logical connection with
// err, and returns err, wrapping ErrEnded if m had ended by then (the
// only way Listen and Open fail here). Close waits for m's reader to
// exit, so Err then tells an end that came first from this Close: Open
// fails as soon as the reader has recorded the end, before Err reports
// it.
func closeEnded(m *mux.Mux, err error) error {
	m.Close()
	if !errors.Is(m.Err(), mux.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrEnded, err)
	}
	return err
}
