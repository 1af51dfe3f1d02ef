package simulator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nrikit/nrikit/adaptation"
)

// tap is a log handler in front of the runtime's logger that picks out
// the registration failures and the disconnections the adaptation logs,
// so that the report and `nri serve` can show them with their reasons.
type tap struct {
	inner        slog.Handler
	failed       func(plugin, reason string)
	disconnected func(plugin, reason string)
}

func newTap(inner slog.Handler, failed, disconnected func(plugin, reason string)) *tap {
	return &tap{inner: inner, failed: failed, disconnected: disconnected}
}

// msgDisconnected is the adaptation's log message for a plugin it
// disconnected, with the plugin and the reason.
const msgDisconnected = "plugin disconnected"

// Enabled is always true for errors and information, which the tap
// inspects whatever the inner handler's level.
func (t *tap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || t.inner.Enabled(ctx, l)
}

// Handle inspects the record and passes it on.
func (t *tap) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level >= slog.LevelError:
		t.inspect(r)
	case r.Message == msgDisconnected:
		t.inspectDisconnect(r)
	}
	if !t.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return t.inner.Handle(ctx, r)
}

func (t *tap) inspect(r slog.Record) {
	switch r.Message {
	case "plugin registration failed", "pre-installed plugin failed to start", "builtin plugin failed to start":
	default:
		return
	}
	var plugin, kind string
	var cause error
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "plugin":
			plugin = a.Value.String()
		case "kind":
			kind = a.Value.String()
		case "pid":
			if plugin == "" {
				plugin = "pid " + a.Value.String()
			}
		case "error":
			if err, ok := a.Value.Any().(error); ok {
				cause = err
			} else {
				cause = errors.New(a.Value.String())
			}
		}
		return true
	})
	if r.Message == "plugin registration failed" && kind == adaptation.KindPreinstalled.String() {
		return // logged again, with the plugin's name, as failed to start
	}
	var rerr *adaptation.RegistrationError
	if errors.As(cause, &rerr) && rerr.Plugin != "" {
		plugin = rerr.Plugin
	}
	if cause == nil {
		cause = fmt.Errorf("%s", r.Message)
	}
	t.failed(plugin, cause.Error())
}

// inspectDisconnect tells disconnected of a plugin the runtime
// disconnected, with its reason.
func (t *tap) inspectDisconnect(r slog.Record) {
	var plugin, reason string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "plugin":
			plugin = a.Value.String()
		case "reason":
			reason = a.Value.String()
		}
		return true
	})
	if plugin != "" {
		t.disconnected(plugin, reason)
	}
}

// WithAttrs returns a tap in front of the inner handler with attrs.
func (t *tap) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &tap{inner: t.inner.WithAttrs(attrs), failed: t.failed, disconnected: t.disconnected}
}

// WithGroup returns a tap in front of the inner handler with the group.
func (t *tap) WithGroup(name string) slog.Handler {
	return &tap{inner: t.inner.WithGroup(name), failed: t.failed, disconnected: t.disconnected}
}
