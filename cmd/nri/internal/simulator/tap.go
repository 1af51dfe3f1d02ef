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
	attrs := recordAttrs(r)
	plugin, kind := attrs.str("plugin"), attrs.str("kind")
	if pid := attrs.str("pid"); plugin == "" && pid != "" {
		plugin = "pid " + pid
	}
	var cause error
	if v, ok := attrs["error"]; ok {
		if err, ok := v.Any().(error); ok {
			cause = err
		} else {
			cause = errors.New(v.String())
		}
	}
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
	attrs := recordAttrs(r)
	if plugin := attrs.str("plugin"); plugin != "" {
		t.disconnected(plugin, attrs.str("reason"))
	}
}

// attrMap is a record's attributes by key.
type attrMap map[string]slog.Value

// recordAttrs returns the record's attributes by key.
func recordAttrs(r slog.Record) attrMap {
	attrs := make(attrMap, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value
		return true
	})
	return attrs
}

// str returns the attribute key as a string, "" if the record has none.
func (m attrMap) str(key string) string {
	if v, ok := m[key]; ok {
		return v.String()
	}
	return ""
}

// WithAttrs returns a tap in front of the inner handler with attrs.
func (t *tap) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &tap{inner: t.inner.WithAttrs(attrs), failed: t.failed, disconnected: t.disconnected}
}

// WithGroup returns a tap in front of the inner handler with the group.
func (t *tap) WithGroup(name string) slog.Handler {
	return &tap{inner: t.inner.WithGroup(name), failed: t.failed, disconnected: t.disconnected}
}
