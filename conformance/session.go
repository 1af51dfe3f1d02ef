package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/mux"
	"github.com/nrikit/nrikit/internal/nriconn"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// answerGrace is how long the checker keeps a connection open after
// answering RegisterPlugin with an error, so that the answer is flushed
// before the socket closes (as nrikit's runtime does).
const answerGrace = 200 * time.Millisecond

// registration is one RegisterPlugin call the checker received. The call
// stays unanswered until answer receives the result, as nrikit's runtime
// answers only after Configure.
type registration struct {
	req    *api.RegisterPluginRequest
	answer chan error
}

// pluginSession is the checker's runtime end of one plugin connection: a
// ttrpc client of the plugin's Plugin service on mux connection 1 and a
// ttrpc server of the Runtime service on connection 2 (nriconn.Session).
type pluginSession struct {
	sess   *nriconn.Session
	mux    *mux.Mux
	plugin api.PluginService

	registrations chan registration
	// stop is closed by close; it releases RegisterPlugin calls still
	// waiting for their answer.
	stop chan struct{}

	closeOnce sync.Once
}

// newPluginSession sets the NRI connection layout up on conn, which the
// session owns from then on. Every write to the plugin is bounded by
// writeTimeout (the request timeout): a plugin that stops reading its
// socket fails the request being written, and loses its connection if
// the write was cut, instead of hanging the check (ttrpc's client
// writes before it looks at the call's context).
func newPluginSession(conn net.Conn, writeTimeout time.Duration) (*pluginSession, error) {
	s := &pluginSession{
		registrations: make(chan registration, 4),
		stop:          make(chan struct{}),
	}
	// The server serves with a background context: it stops with close,
	// not with the check's context, which must not tear down mid-answer.
	sess, err := nriconn.Open(conn, nriconn.RuntimeRole, nriconn.Config{
		WriteTimeout: writeTimeout,
		Register:     func(sess *nriconn.Session) { api.RegisterRuntimeService(sess.Server, (*sessionRuntime)(s)) },
	})
	if err != nil {
		return nil, err
	}
	s.sess, s.mux = sess, sess.Mux
	s.plugin = api.NewPluginClient(sess.Client)
	return s, nil
}

// done is closed when the connection is gone.
func (s *pluginSession) done() <-chan struct{} { return s.mux.Done() }

// closeWrite half-closes the socket: the plugin reads EOF, as if the
// runtime had closed it, while the checker can still see the plugin close
// its end.
func (s *pluginSession) closeWrite() error {
	cw, ok := s.mux.Trunk().(interface{ CloseWrite() error })
	if !ok {
		return s.close()
	}
	if err := cw.CloseWrite(); err != nil {
		return fmt.Errorf("half-closing the socket: %w", err)
	}
	return nil
}

// close tears the connection down and waits for the server goroutine.
func (s *pluginSession) close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		err = s.sess.Close()
	})
	return err
}

// sessionRuntime is the Runtime service the checker serves.
type sessionRuntime pluginSession

// RegisterPlugin hands the call to the checker and waits for its verdict.
func (r *sessionRuntime) RegisterPlugin(ctx context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	reg := registration{req: req, answer: make(chan error, 1)}
	select {
	case r.registrations <- reg:
	default:
		return nil, status.Error(codes.AlreadyExists, "RegisterPlugin called again on the same connection")
	}
	select {
	case err := <-reg.answer:
		if err != nil {
			return nil, err
		}
		return &api.Empty{}, nil
	case <-ctx.Done():
		return nil, status.Error(codes.DeadlineExceeded, "the checker did not answer RegisterPlugin in time")
	case <-r.stop:
		return nil, status.Error(codes.Unavailable, "the checker closed the connection")
	}
}

// UpdateContainers accepts every unsolicited update.
func (r *sessionRuntime) UpdateContainers(_ context.Context, _ *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return &api.UpdateContainersResponse{}, nil
}

// describeCallError turns the error of a call to the plugin into a reason.
func describeCallError(err error) string {
	if err == nil {
		return ""
	}
	if d := describeWASMError(err); d != "" {
		return d
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the request timeout"
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "the plugin did not take the request within the request timeout (it does not read its socket): " + err.Error()
	}
	if errors.Is(err, ttrpc.ErrClosed) {
		return "connection lost: " + err.Error()
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.DeadlineExceeded {
			return "no answer within the request timeout"
		}
		return fmt.Sprintf("error %s: %s", st.Code(), st.Message())
	}
	return err.Error()
}
