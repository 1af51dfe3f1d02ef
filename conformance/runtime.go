package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/grpc/status"
)

// Names of the runtime checks, as they appear in a Report. The first five
// are what the NRI protocol requires of every runtime, containerd's
// included; the last two are informational: they report what the runtime
// did about an nrikit extension or recommendation and never fail.
const (
	CheckRuntimeRegisters    = "answers RegisterPlugin"
	CheckRuntimeConfigure    = "sends Configure with sane timeouts"
	CheckRuntimeSynchronize  = "delivers Synchronize"
	CheckRuntimeInvalidName  = "rejects an invalid plugin name with a reason"
	CheckRuntimeUnknownEvent = "refuses unknown event bits"

	// CheckRuntimeSupported reports ConfigureRequest.supported_events,
	// an nrikit extension.
	CheckRuntimeSupported = "advertises its supported events"
	// CheckRuntimeUnknownEventReason reports how the runtime refused
	// the unknown event bits: nrikit's runtime answers RegisterPlugin
	// with the reason, upstream's closes the connection after Configure.
	CheckRuntimeUnknownEventReason = "gives the reason for refusing unknown event bits"
)

// DefaultRuntimeCheckName is the IDX-NAME the runtime checker registers
// as unless RuntimeConfig.Name says otherwise.
const DefaultRuntimeCheckName = "99-nri-conformance"

// DefaultRuntimeCheckTimeout bounds each step of CheckRuntime unless
// RuntimeConfig.Timeout says otherwise.
const DefaultRuntimeCheckTimeout = 10 * time.Second

// maxSaneTimeout is the longest registration or request timeout the
// runtime checker accepts as sane.
const maxSaneTimeout = 5 * time.Minute

// unknownEventBit is a subscription bit no NRI version defines.
const unknownEventBit = int32(1) << 20

// RuntimeConfig says how CheckRuntime checks a runtime.
type RuntimeConfig struct {
	// Name is the IDX-NAME the checker registers as (default
	// DefaultRuntimeCheckName); the check connections use variants of it.
	Name string
	// Timeout bounds each step (default DefaultRuntimeCheckTimeout).
	Timeout time.Duration
}

// CheckRuntime connects to the runtime listening on socketPath as plugins
// do and checks its side of the registration. It returns an error only if
// the runtime's socket cannot be reached at all.
func CheckRuntime(ctx context.Context, socketPath string, cfg RuntimeConfig) (*Report, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultRuntimeCheckName
	}
	idx, name, err := api.ParsePluginName(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("checker name %q: %w", cfg.Name, err)
	}
	defaultDuration(&cfg.Timeout, DefaultRuntimeCheckTimeout)
	rc := &runtimeCheck{cfg: cfg, socket: socketPath, idx: idx, name: name}

	subscribe := api.MaskOf(api.Event_RUN_POD_SANDBOX)
	main, err := dialRuntime(ctx, socketPath, newProbePlugin(int32(subscribe)), cfg.Timeout)
	if err != nil {
		return nil, err
	}
	defer main.close()
	rc.registration(ctx, main)
	rc.invalidName(ctx)
	rc.unknownEvent(ctx)
	return &rc.rec.report, nil
}

// runtimeCheck is one run of CheckRuntime.
type runtimeCheck struct {
	cfg       RuntimeConfig
	socket    string
	idx, name string
	rec       recorder
}

// register calls RegisterPlugin in the background: a nrikit runtime
// answers only after Configure, which the session serves meanwhile.
func register(ctx context.Context, s *runtimeSession, idx, name string, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := s.runtime.RegisterPlugin(cctx, &api.RegisterPluginRequest{
			PluginName: name, PluginIdx: idx, NRIVersion: api.NRIVersion,
		})
		done <- err
	}()
	return done
}

func (rc *runtimeCheck) registration(ctx context.Context, s *runtimeSession) {
	start := time.Now()
	registered := register(ctx, s, rc.idx, rc.name, rc.cfg.Timeout)
	timer := time.NewTimer(rc.cfg.Timeout)
	defer timer.Stop()

	var (
		conf    *api.ConfigureRequest
		confAt  time.Duration
		regErr  error
		regDone bool
	)
wait:
	for !regDone || conf == nil {
		select {
		case conf = <-s.plugin.configured:
			confAt = time.Since(start)
		case regErr = <-registered:
			regDone, registered = true, nil
			if regErr != nil {
				break wait
			}
		case <-s.mux.Done():
			if !regDone {
				regErr = fmt.Errorf("connection closed: %w", s.mux.Err())
			}
			break wait
		case <-timer.C:
			if !regDone {
				regErr = fmt.Errorf("no answer within %s", rc.cfg.Timeout)
			}
			break wait
		case <-ctx.Done():
			if !regDone {
				regErr = ctx.Err()
			}
			break wait
		}
	}
	d := time.Since(start)
	if regErr != nil {
		rc.rec.fail(CheckRuntimeRegisters, d, "%s", describeCallError(regErr))
	} else {
		rc.rec.pass(CheckRuntimeRegisters, d, "registered as %s", api.FullPluginName(rc.idx, rc.name))
	}
	rc.configure(conf, confAt)
	if regErr == nil {
		rc.synchronize(ctx, s, start)
	}
}

// configure checks the runtime's Configure request, nil if none came.
func (rc *runtimeCheck) configure(conf *api.ConfigureRequest, at time.Duration) {
	if conf == nil {
		rc.rec.fail(CheckRuntimeConfigure, 0, "no Configure received")
		rc.rec.info(CheckRuntimeSupported, 0, "unknown: no Configure received")
		return
	}
	var problems []string
	for _, t := range []struct {
		name string
		ms   int64
	}{{"registration_timeout", conf.GetRegistrationTimeout()}, {"request_timeout", conf.GetRequestTimeout()}} {
		d := time.Duration(t.ms) * time.Millisecond
		if d <= 0 || d >= maxSaneTimeout {
			problems = append(problems, fmt.Sprintf("%s %d ms is not in (0, %s)", t.name, t.ms, maxSaneTimeout))
		}
	}
	desc := fmt.Sprintf("%s %s (NRI %s): registration %d ms, request %d ms",
		conf.GetRuntimeName(), conf.GetRuntimeVersion(), conf.GetNRIVersion(), conf.GetRegistrationTimeout(), conf.GetRequestTimeout())
	if len(problems) > 0 {
		rc.rec.fail(CheckRuntimeConfigure, at, "%s: %s", desc, strings.Join(problems, "; "))
	} else {
		rc.rec.pass(CheckRuntimeConfigure, at, "%s", desc)
	}
	if m := api.EventMask(conf.GetSupportedEvents()); m != 0 {
		rc.rec.info(CheckRuntimeSupported, 0, "advertised: %s (0x%x)", m, int32(m))
	} else {
		rc.rec.info(CheckRuntimeSupported, 0, "not advertised (supported_events = 0; upstream runtimes never set this nrikit extension)")
	}
}

func (rc *runtimeCheck) synchronize(ctx context.Context, s *runtimeSession, start time.Time) {
	timer := time.NewTimer(rc.cfg.Timeout)
	defer timer.Stop()
	select {
	case sum := <-s.plugin.synced:
		rc.rec.pass(CheckRuntimeSynchronize, time.Since(start), "%d part(s): %d pods, %d containers", sum.parts, sum.pods, sum.containers)
	case <-s.mux.Done():
		rc.rec.fail(CheckRuntimeSynchronize, time.Since(start), "connection closed before Synchronize: %v", s.mux.Err())
	case <-timer.C:
		rc.rec.fail(CheckRuntimeSynchronize, time.Since(start), "no Synchronize within %s of registering", rc.cfg.Timeout)
	case <-ctx.Done():
		rc.rec.fail(CheckRuntimeSynchronize, time.Since(start), "check cancelled: %v", ctx.Err())
	}
}

// expectRejection registers on a new connection, whose plugin subscribes
// to events, and requires an error answer with a reason.
func (rc *runtimeCheck) expectRejection(ctx context.Context, check, idx, name string, events int32) {
	start := time.Now()
	s, err := dialRuntime(ctx, rc.socket, newProbePlugin(events), rc.cfg.Timeout)
	if err != nil {
		rc.rec.fail(check, time.Since(start), "%v", err)
		return
	}
	defer s.close()
	err = <-register(ctx, s, idx, name, rc.cfg.Timeout)
	d := time.Since(start)
	st, isStatus := status.FromError(err)
	switch {
	case err == nil:
		rc.rec.fail(check, d, "RegisterPlugin succeeded")
	case errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, io.EOF):
		rc.rec.fail(check, d, "the connection was closed without a reason: %v", err)
	case errors.Is(err, context.DeadlineExceeded):
		rc.rec.fail(check, d, "no answer to RegisterPlugin within %s", rc.cfg.Timeout)
	case !isStatus:
		rc.rec.fail(check, d, "RegisterPlugin failed without an error status: %v", err)
	case st.Message() == "":
		rc.rec.fail(check, d, "error %s without a message", st.Code())
	default:
		rc.rec.pass(check, d, "%s: %s", st.Code(), st.Message())
	}
}

func (rc *runtimeCheck) invalidName(ctx context.Context) {
	rc.expectRejection(ctx, CheckRuntimeInvalidName, rc.idx, "invalid name!", int32(api.MaskOf(api.Event_RUN_POD_SANDBOX)))
}

// unknownEvent registers on a new connection whose plugin subscribes to an
// event bit no NRI version defines. The protocol requires the runtime to
// refuse the plugin, but not how: upstream's runtime answers RegisterPlugin
// at once and closes the connection once Configure's answer shows the bad
// subscription; nrikit's answers RegisterPlugin only after Configure, with
// the reason. Either passes CheckRuntimeUnknownEvent; which one it was is
// CheckRuntimeUnknownEventReason.
func (rc *runtimeCheck) unknownEvent(ctx context.Context) {
	start := time.Now()
	s, err := dialRuntime(ctx, rc.socket, newProbePlugin(unknownEventBit), rc.cfg.Timeout)
	if err != nil {
		d := time.Since(start)
		rc.rec.fail(CheckRuntimeUnknownEvent, d, "%v", err)
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "unknown: %v", err)
		return
	}
	defer s.close()
	o := watchRefusal(ctx, s, rc.idx, rc.name+"-badsub", rc.cfg.Timeout)
	d := time.Since(start)
	st, isStatus := status.FromError(o.regErr)
	answer := o.regErr != nil && isStatus && !isClosedErr(o.regErr)
	switch {
	case answer:
		rc.rec.pass(CheckRuntimeUnknownEvent, d, "RegisterPlugin failed with %s", st.Code())
		if st.Message() == "" {
			rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: RegisterPlugin failed with %s without a message", st.Code())
		} else {
			rc.rec.info(CheckRuntimeUnknownEventReason, d, "%s: %s", st.Code(), st.Message())
		}
	case o.synced:
		rc.rec.fail(CheckRuntimeUnknownEvent, d, "accepted the subscription: RegisterPlugin succeeded and Synchronize followed")
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: the subscription was accepted")
	case o.closed:
		when := "before Configure"
		if o.configured {
			when = "after Configure"
		}
		rc.rec.pass(CheckRuntimeUnknownEvent, d, "closed the connection %s, before Synchronize", when)
		what := fmt.Sprintf("closed the connection %s without a reason", when)
		if o.configured {
			what += " (containerd does this)"
		}
		if o.registered {
			// Seen only if ttrpc delivered the answer before the close.
			what = "answered RegisterPlugin, then " + what
		}
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: %s", what)
	case o.registered:
		rc.rec.fail(CheckRuntimeUnknownEvent, d,
			"RegisterPlugin succeeded and the runtime neither closed the connection nor synchronized the plugin within %s", rc.cfg.Timeout)
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: the subscription was not refused")
	case o.regErr != nil && !errors.Is(o.regErr, context.DeadlineExceeded):
		rc.rec.fail(CheckRuntimeUnknownEvent, d, "RegisterPlugin failed without an error status: %v", o.regErr)
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: %v", o.regErr)
	default:
		rc.rec.fail(CheckRuntimeUnknownEvent, d, "no answer to RegisterPlugin within %s", rc.cfg.Timeout)
		rc.rec.info(CheckRuntimeUnknownEventReason, d, "none: no answer")
	}
}

// refusal is what a runtime did with a registration it should refuse.
type refusal struct {
	registered bool  // RegisterPlugin succeeded
	regErr     error // RegisterPlugin's error, if it failed
	configured bool  // Configure arrived
	synced     bool  // Synchronize arrived: the plugin was accepted
	closed     bool  // the runtime closed the connection
}

// watchRefusal calls RegisterPlugin on s and follows the registration
// until the runtime answers it with an error, closes the connection,
// synchronizes the plugin, or timeout passes.
func watchRefusal(ctx context.Context, s *runtimeSession, idx, name string, timeout time.Duration) refusal {
	var o refusal
	registered := register(ctx, s, idx, name, timeout)
	configured := s.plugin.configured
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case err := <-registered:
			registered = nil
			if err == nil {
				o.registered = true
				continue // the runtime may still refuse the subscription
			}
			o.regErr = err
			if !isClosedErr(err) {
				return o
			}
		case <-configured:
			configured, o.configured = nil, true
		case <-s.plugin.synced:
			o.synced = true
			return o
		case <-s.mux.Done():
			o.closed = true
			if registered != nil {
				// A refusal answered just before the close is the
				// better evidence: wait for the call to end.
				select {
				case err := <-registered:
					o.registered, o.regErr = err == nil, err
				case <-timer.C:
				}
			}
			select {
			case <-configured:
				o.configured = true
			default:
			}
			return o
		case <-timer.C:
			return o
		case <-ctx.Done():
			return o
		}
	}
}

// isClosedErr reports whether err says the connection was closed rather
// than carrying the runtime's answer.
func isClosedErr(err error) bool {
	return errors.Is(err, ttrpc.ErrClosed) || errors.Is(err, io.EOF)
}
