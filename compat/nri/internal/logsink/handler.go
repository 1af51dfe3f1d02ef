package logsink

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
)

// Attrs flattens what a slog.Handler holds: the attributes it was given
// (their keys qualified by their groups) and a record's, under the
// handler's group.
type Attrs struct {
	attrs []slog.Attr
	group string
}

// With returns a copy with attrs added under the current group.
func (a Attrs) With(attrs []slog.Attr) Attrs {
	out := Attrs{attrs: slices.Clone(a.attrs), group: a.group}
	for _, at := range attrs {
		if a.group != "" {
			at.Key = a.group + "." + at.Key
		}
		out.attrs = append(out.attrs, at)
	}
	return out
}

// Group returns a copy whose later attributes are under group name.
func (a Attrs) Group(name string) Attrs {
	if name == "" {
		return a
	}
	return Attrs{attrs: a.attrs, group: strings.TrimPrefix(a.group+"."+name, ".")}
}

// Fields returns the handler's and r's attributes by qualified key.
func (a Attrs) Fields(r slog.Record) map[string]any {
	fields := map[string]any{}
	add := func(at slog.Attr, group string) {
		if at.Equal(slog.Attr{}) {
			return
		}
		key := at.Key
		if group != "" {
			key = group + "." + key
		}
		fields[key] = at.Value.Resolve().Any()
	}
	for _, at := range a.attrs {
		add(at, "")
	}
	r.Attrs(func(at slog.Attr) bool {
		add(at, a.group)
		return true
	})
	return fields
}

// Write writes a record to l at the level lvl maps to: the message,
// then the fields as key=value in key order (values quoted where they
// hold spaces or quotes), as logrus's text format writes them.
func Write(ctx context.Context, l Logger, lvl slog.Level, msg string, fields map[string]any) {
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
	switch {
	case lvl >= slog.LevelError:
		l.Errorf(ctx, "%s", b.String())
	case lvl >= slog.LevelWarn:
		l.Warnf(ctx, "%s", b.String())
	case lvl >= slog.LevelInfo:
		l.Infof(ctx, "%s", b.String())
	default:
		l.Debugf(ctx, "%s", b.String())
	}
}

// Handler is a slog.Handler writing to a Logger, which filters levels
// itself.
type Handler struct {
	to    Logger
	attrs Attrs
}

// NewHandler returns a Handler writing to l.
func NewHandler(l Logger) Handler { return Handler{to: l} }

// Enabled reports true: the Logger filters.
func (Handler) Enabled(context.Context, slog.Level) bool { return true }

// Handle writes r.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	Write(ctx, h.to, r.Level, r.Message, h.attrs.Fields(r))
	return nil
}

// WithAttrs returns a handler adding attrs to every record.
func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{to: h.to, attrs: h.attrs.With(attrs)}
}

// WithGroup returns a handler qualifying later attributes with name.
func (h Handler) WithGroup(name string) slog.Handler {
	return Handler{to: h.to, attrs: h.attrs.Group(name)}
}
