package adaptation

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
)

// WithTTRPCOptions adds options to the ttrpc client that calls each
// connected plugin and to the ttrpc server that serves the Runtime
// service to it, for example interceptors that trace every call
// (containerd passes otelttrpc's). Builtin plugins are called directly
// and see neither. The options must not replace what the Adaptation
// sets up itself (the connection, its message limits). A request the
// Adaptation encoded itself (the events about pods and containers,
// Synchronize's parts) reaches the client interceptors with an empty
// Payload: its bytes are put in place after them, which spares ttrpc's
// codec a copy of every request.
func WithTTRPCOptions(client []ttrpc.ClientOpts, server []ttrpc.ServerOpt) Option {
	return func(c *config) error {
		for _, o := range client {
			if o == nil {
				return errors.New("adaptation: nil ttrpc client option")
			}
		}
		for _, o := range server {
			if o == nil {
				return errors.New("adaptation: nil ttrpc server option")
			}
		}
		c.clientOpts = append(c.clientOpts, client...)
		c.serverOpts = append(c.serverOpts, server...)
		return nil
	}
}

// MetricsRecorder is a runtime's metrics, told about plugins (package
// adaptation/runtimemetrics is one, in Prometheus). It may implement
// [RequestRecorder], [DeniedRecorder] and [AuditedRecorder] to be told
// more. Its methods
// must return quickly and must not call the Adaptation.
type MetricsRecorder interface {
	// RecordCall is told about every request to a plugin once it is
	// answered or failed, as an [Observer] is (same goroutines, same
	// order, same context).
	RecordCall(ctx context.Context, c Call)
	// RecordPluginCount is told the number of plugins receiving events
	// (synchronizing or active) whenever it changes. It may be called
	// while the Adaptation holds its registry lock.
	RecordPluginCount(n int)
}

// WithMetricsRecorder reports requests and the number of plugins to r,
// in addition to an [Observer]. Given more than once, each recorder is
// told, in the order given.
func WithMetricsRecorder(r MetricsRecorder) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("adaptation: nil metrics recorder")
		}
		c.recorders = append(c.recorders, r)
		return nil
	}
}

// Deprecation is a deprecated protocol feature a plugin uses.
type Deprecation int

const (
	// DeprecatedStateChange is reported for a plugin that does not
	// implement an event's dedicated RPC, so the event is sent to it as
	// a StateChange.
	DeprecatedStateChange Deprecation = iota + 1
)

// String names the deprecation.
func (d Deprecation) String() string {
	switch d {
	case DeprecatedStateChange:
		return "deprecated StateChange"
	}
	return fmt.Sprintf("Deprecation(%d)", int(d))
}

// DeprecationRecorder is told when a plugin uses a deprecated feature,
// once per plugin connection, feature and event, so that a runtime can
// warn its users. PluginWarning must return quickly and must not call
// the Adaptation.
type DeprecationRecorder interface {
	// PluginWarning reports that plugin (IDX-NAME) uses d; details says
	// where.
	PluginWarning(ctx context.Context, d Deprecation, plugin, details string)
}

// WithDeprecationRecorder reports the deprecated features plugins use to
// r (they are logged as warnings either way).
func WithDeprecationRecorder(r DeprecationRecorder) Option {
	return func(c *config) error {
		if r == nil {
			return errors.New("adaptation: nil deprecation recorder")
		}
		c.deprecation = r
		return nil
	}
}

// deprecatedStateChange reports that plugin uses StateChange for event e.
// The dispatch path calls it the first time it falls back for a plugin
// connection and event.
func (a *Adaptation) deprecatedStateChange(ctx context.Context, plugin string, e api.Event) {
	if a.cfg.deprecation == nil {
		return
	}
	a.cfg.deprecation.PluginWarning(ctx, DeprecatedStateChange, plugin,
		"does not implement a dedicated "+e.Name()+" RPC call")
}

// observerWithRecorder returns the observer that tells both o (may be
// nil) and r about every request.
func observerWithRecorder(o Observer, r MetricsRecorder) Observer {
	return func(ctx context.Context, c Call) {
		if o != nil {
			o(ctx, c)
		}
		r.RecordCall(ctx, c)
	}
}
