// Package httpserve serves the small HTTP endpoints of nrikit's programs
// (Prometheus metrics, health probes) with the timeouts such a server
// needs, and stops them within a bound.
package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Timeouts of every Server.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = time.Minute
	maxHeaderBytes    = 64 << 10
	// shutdownGrace bounds Close's wait for requests in flight.
	shutdownGrace = 5 * time.Second
)

// Server serves one handler on one TCP listener until Close.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve returned
}

// Start listens on the TCP address addr and serves h there. onErr, if not
// nil, is called (from the serving goroutine) if serving fails other than
// by Close.
func Start(addr string, h http.Handler, onErr func(error)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln: ln,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && onErr != nil {
			onErr(err)
		}
	}()
	return s, nil
}

// Addr is the address served on (with the port chosen when addr asked for
// port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving, after at most a few seconds for requests in
// flight, and returns once the serving goroutine has ended.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}
