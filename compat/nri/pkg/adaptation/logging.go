package adaptation

import (
	"context"
	"log/slog"

	"github.com/containerd/log"

	"github.com/containerd/nri/internal/logsink"
)

// logger is the runtime library's logger inside a runtime that adopted
// this module: its records go to github.com/containerd/log, the logger
// containerd (and upstream's NRI inside it) writes to, so NRI's lines have
// containerd's format, level and destination; or, once the runtime set
// one with pkg/log's Set (moby does), to that logger, fields written into
// the message.
func logger() *slog.Logger { return slog.New(containerdHandler{}) }

// containerdHandler is a slog.Handler writing to containerd/log.
type containerdHandler struct {
	attrs logsink.Attrs
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
	if _, ok := logsink.Custom(); ok {
		return true // the runtime's logger filters levels itself
	}
	return log.L.Logger.IsLevelEnabled(level(l))
}

func (h containerdHandler) Handle(ctx context.Context, r slog.Record) error {
	fields := h.attrs.Fields(r)
	if custom, ok := logsink.Custom(); ok {
		logsink.Write(ctx, custom, r.Level, r.Message, fields)
		return nil
	}
	log.G(ctx).WithFields(fields).Log(level(r.Level), r.Message)
	return nil
}

func (h containerdHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return containerdHandler{attrs: h.attrs.With(attrs)}
}

func (h containerdHandler) WithGroup(name string) slog.Handler {
	return containerdHandler{attrs: h.attrs.Group(name)}
}
