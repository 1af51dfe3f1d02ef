package adaptation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

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
	if _, ok := logsink.Custom(); ok {
		return true // the runtime's logger filters levels itself
	}
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
	if custom, ok := logsink.Custom(); ok {
		toCustom(ctx, custom, r.Level, r.Message, fields)
		return nil
	}
	log.G(ctx).WithFields(fields).Log(level(r.Level), r.Message)
	return nil
}

// toCustom writes a record to a runtime's pkg/log Logger: the message,
// then the fields as key=value in key order (values quoted where they
// hold spaces or quotes), as logrus's text format writes them.
func toCustom(ctx context.Context, l logsink.Logger, lvl slog.Level, msg string, fields log.Fields) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(msg)
	for _, k := range keys {
		v := fmt.Sprint(fields[k])
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	switch level(lvl) {
	case log.ErrorLevel:
		l.Errorf(ctx, "%s", b.String())
	case log.WarnLevel:
		l.Warnf(ctx, "%s", b.String())
	case log.InfoLevel:
		l.Infof(ctx, "%s", b.String())
	default:
		l.Debugf(ctx, "%s", b.String())
	}
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
