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

// Names of the runtime checks, as they appear in a Report.
const (
	CheckRuntimeRegisters    = "answers RegisterPlugin"
	CheckRuntimeConfigure    = "sends Configure with sane timeouts"
	CheckRuntimeSupported    = "supported events (informational)"
	CheckRuntimeSynchronize  = "delivers Synchronize"
	CheckRuntimeInvalidName  = "rejects an invalid plugin name with a reason"
	CheckRuntimeUnknownEvent = "rejects unknown event bits with a reason"
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
		return nil, fmt.Errorf("conformance: checker name %q: %w", cfg.Name, err)
	}
	defaultDuration(&cfg.Timeout, DefaultRuntimeCheckTimeout)
	rc := &runtimeCheck{cfg: cfg, socket: socketPath, idx: idx, name: name}

	subscribe := api.MaskOf(api.Event_RUN_POD_SANDBOX)
	main, err := dialRuntime(ctx, socketPath, newProbePlugin(int32(subscribe)), cfg.Timeout)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
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
			PluginName: name, PluginIdx: idx, NRIVersion: checkerNRIVersion,
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
		rc.rec.pass(CheckRuntimeSupported, 0, "unknown: no Configure received")
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
		rc.rec.pass(CheckRuntimeSupported, 0, "advertised: %s (0x%x)", m, int32(m))
	} else {
		rc.rec.pass(CheckRuntimeSupported, 0, "not advertised (supported_events = 0)")
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

func (rc *runtimeCheck) unknownEvent(ctx context.Context) {
	rc.expectRejection(ctx, CheckRuntimeUnknownEvent, rc.idx, rc.name+"-badsub", unknownEventBit)
}
