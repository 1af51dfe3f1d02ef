package stub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/status"

	"github.com/nrikit/nrikit/api"
)

// flushGrace bounds how long the stub waits, after a failed Configure, for
// its answer to reach the runtime before it closes the connection.
const flushGrace = time.Second

// register performs the registration handshake on sess: RegisterPlugin
// and Configure, in either order. It returns nil once both succeeded, or
// once the runtime started to synchronize the plugin, which it does only
// after accepting it. (The latter also covers a RegisterPlugin answer that
// ttrpc drops when the connection closes right after it.)
func (st *Stub) register(ctx context.Context, sess *session, stopC <-chan struct{}) error {
	timeout := st.c.runtime().RegTimeout
	timer := time.NewTimer(timeout)
	defer timer.Stop()

	rctx, cancel := context.WithCancel(ctx)
	regC := make(chan error, 1)
	go func() {
		_, err := sess.runtime.RegisterPlugin(rctx, &api.RegisterPluginRequest{
			PluginName: st.id.name,
			PluginIdx:  st.id.idx,
			NRIVersion: api.NRIVersion,
		})
		regC <- err
	}()
	answered, accepted := false, false
	defer func() {
		if !answered && accepted {
			// The runtime synchronizes only after it answered
			// RegisterPlugin, so the answer is on its way (on the
			// other logical connection): let it arrive, or ttrpc's
			// client logs it as an error once the call was given up.
			grace := time.NewTimer(flushGrace)
			select {
			case <-regC:
				answered = true
			case <-sess.lostC:
			case <-grace.C:
			}
			grace.Stop()
		}
		cancel()
		if !answered {
			<-regC // the call returns promptly once rctx is cancelled
		}
	}()

	st.c.log.Info("registering plugin", "plugin", st.Name(), "connection", st.id.source.String())
	registered, configured := false, false
	done := func() error {
		accepted = true
		st.c.log.Info("plugin registered", "plugin", st.Name(), "events", st.c.runtime().Subscription)
		return nil
	}
	for !registered || !configured {
		select {
		case err := <-regC:
			answered = true
			switch {
			case err == nil:
				registered = true
			case sess.synchronizing():
				return done()
			default:
				// Our own configuration error explains a rejection
				// best.
				select {
				case cerr := <-sess.cfgC:
					if cerr != nil && !errors.Is(cerr, errAnsweredLate) {
						return st.configurationFailed(cerr)
					}
				default:
				}
				return st.registrationFailed(err, sess)
			}
		case err := <-sess.cfgC:
			if errors.Is(err, errAnsweredLate) && awaitLost(sess) {
				return lostError(" during registration", sess.cause())
			}
			if err != nil {
				if !answered {
					answered = awaitAnswer(regC, sess, timer.C)
				}
				return st.configurationFailed(err)
			}
			configured = true
			// The runtime's registration timeout now applies.
			timeout = st.c.runtime().RegTimeout
			timer.Reset(timeout)
		case <-sess.syncC:
			return done()
		case <-sess.lostC:
			if sess.synchronizing() {
				return done() // the supervisor reports the loss
			}
			// A rejection is answered just before the runtime closes
			// the connection: prefer the answer, if there is one.
			if !answered {
				grace := time.NewTimer(flushGrace)
				select {
				case err := <-regC:
					answered = true
					if err != nil && isStatus(err) {
						grace.Stop()
						return st.registrationFailed(err, sess)
					}
				case <-grace.C:
				}
				grace.Stop()
			}
			sess.close()
			select {
			case cerr := <-sess.cfgC:
				if cerr != nil && !errors.Is(cerr, errAnsweredLate) {
					return st.configurationFailed(cerr)
				}
			default:
			}
			return lostError(" during registration", sess.cause())
		case <-timer.C:
			var missing []string
			if !registered {
				missing = append(missing, "answer RegisterPlugin")
			}
			if !configured {
				missing = append(missing, "send Configure")
			}
			return fmt.Errorf("stub: %w after %v: the runtime did not %s", ErrRegistrationTimeout, timeout, joinAnd(missing))
		case <-ctx.Done():
			return fmt.Errorf("stub: registration: %w", ctx.Err())
		case <-stopC:
			return ErrClosed
		}
	}
	return done()
}

// awaitAnswer gives a failed Configure's answer time to reach the runtime:
// it waits for the RegisterPlugin answer (a nrikit runtime answers it with
// the reason), for the connection to drop (an upstream runtime closes it)
// or at most flushGrace. It reports whether regC was received from.
func awaitAnswer(regC <-chan error, sess *session, deadline <-chan time.Time) bool {
	grace := time.NewTimer(flushGrace)
	defer grace.Stop()
	select {
	case <-regC:
		return true
	case <-sess.lostC:
	case <-grace.C:
	case <-deadline:
	}
	return false
}

// configurationFailed is the error Start returns when the plugin's own
// configuration failed.
func (st *Stub) configurationFailed(err error) error {
	return fmt.Errorf("stub: plugin %s: configuration failed: %w", st.Name(), err)
}

// awaitLost waits at most flushGrace for the connection to drop; if it
// does, it closes the session and reports true.
func awaitLost(sess *session) bool {
	grace := time.NewTimer(flushGrace)
	defer grace.Stop()
	select {
	case <-sess.lostC:
		sess.close()
		return true
	case <-grace.C:
		return false
	}
}

// isStatus reports whether err carries a ttrpc/gRPC status, that is, it
// is the runtime's answer rather than a transport error.
func isStatus(err error) bool {
	if errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	_, ok := status.FromError(err)
	return ok
}

// registrationFailed turns the error of the RegisterPlugin call into the
// error Start returns.
func (st *Stub) registrationFailed(err error, sess *session) error {
	if isStatus(err) {
		s, _ := status.FromError(err)
		st.c.log.Error("runtime rejected registration", "plugin", st.Name(), "code", s.Code(), "reason", s.Message())
		return &RegistrationError{Message: s.Message(), Code: s.Code()}
	}
	sess.close()
	return lostError(" during registration", fmt.Errorf("RegisterPlugin: %w (%w)", err, sess.cause()))
}

// joinAnd joins words with ", " and a final " and ".
func joinAnd(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " and " + words[len(words)-1]
}
