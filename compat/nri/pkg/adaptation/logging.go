package adaptation

import (
	"context"
	"log/slog"
	"strings"

	"github.com/containerd/log"
)

// logger is the runtime library's logger inside a runtime that adopted
// this module: its records go to github.com/containerd/log, the logger
// containerd (and upstream's NRI inside it) writes to, so NRI's lines have
// containerd's format, level and destination.
func logger() *slog.Logger { return slog.New(containerdHandler{}) }

// containerdHandler is a slog.Handler writing to containerd/log.
type containerdHandler struct {
	attrs []slog.Attr
	group string
}

// level maps a slog level to containerd/log's.
func level(l slog.Level) log.Level {
	switch {
	case l >= slog.LevelError:
		return log.ErrorLevel
	case l >= slog.LevelWarn:
		return log.WarnLevel
	case l >= slog.LevelInfo:
		return log.InfoLevel
	}
	return log.DebugLevel
}

func (containerdHandler) Enabled(_ context.Context, l slog.Level) bool {
	return log.L.Logger.IsLevelEnabled(level(l))
}

func (h containerdHandler) Handle(ctx context.Context, r slog.Record) error {
	fields := log.Fields{}
	add := func(a slog.Attr, group string) {
		if a.Equal(slog.Attr{}) {
			return
		}
		key := a.Key
		if group != "" {
			key = group + "." + key
		}
		fields[key] = a.Value.Resolve().Any()
	}
	for _, a := range h.attrs {
		add(a, "")
	}
	r.Attrs(func(a slog.Attr) bool {
		add(a, h.group)
		return true
	})
	log.G(ctx).WithFields(fields).Log(level(r.Level), r.Message)
	return nil
}

func (h containerdHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := containerdHandler{attrs: append([]slog.Attr(nil), h.attrs...), group: h.group}
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		out.attrs = append(out.attrs, a)
	}
	return out
}

func (h containerdHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return containerdHandler{attrs: h.attrs, group: strings.TrimPrefix(h.group+"."+name, ".")}
}
