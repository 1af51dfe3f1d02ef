package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The log formats of --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// newLogHandler returns the handler of the nri command's log lines on w:
// text (key=value) or JSON, every line with its time, at level and above.
// Lines a launched plugin writes to its output, which the runtime library
// logs as records with the attributes "plugin" and "stream", are written
// as the plugin's own lines with a plugin attribute (see pluginLines).
func newLogHandler(w io.Writer, format string, level slog.Level) slog.Handler {
	lw := &lockedWriter{w: w}
	opts := &slog.HandlerOptions{Level: level}
	var inner slog.Handler
	if format == logFormatJSON {
		inner = slog.NewJSONHandler(lw, opts)
	} else {
		inner = slog.NewTextHandler(lw, opts)
	}
	return &pluginLines{inner: inner, w: lw, json: format == logFormatJSON, level: level}
}

// lockedWriter serializes the writes of the handler and of the forwarded
// plugin lines, so that lines do not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// pluginLines is a slog handler in front of the text or JSON handler: a
// record the runtime library logs for a line of a launched plugin's
// output (its message the line, attributes plugin=IDX-NAME and
// stream=stdout|stderr, at level INFO for stdout and WARN for stderr) is
// written as the plugin's own log line, with its own time and level, and
// plugin=IDX-NAME added. Lines that are not log lines (a program's plain
// output) become records of their own with the line as the message, at
// the runtime's level. Log lines are filtered by their own level, not by
// the level the runtime forwards them at.
type pluginLines struct {
	inner slog.Handler
	w     io.Writer
	json  bool
	level slog.Level
	// attrs are those of WithAttrs, and grouped whether WithGroup was
	// called: a text record with a value of several lines is written by
	// pluginLines itself (see multiline), with attrs, unless grouped.
	attrs   []slog.Attr
	grouped bool
}

// Enabled is also true for INFO and WARN, the levels plugin lines arrive
// at.
func (h *pluginLines) Enabled(ctx context.Context, l slog.Level) bool {
	return l == slog.LevelInfo || l == slog.LevelWarn || h.inner.Enabled(ctx, l)
}

// Handle writes a plugin line as the plugin's, any other record through
// the inner handler.
func (h *pluginLines) Handle(ctx context.Context, r slog.Record) error {
	plugin, stream := "", ""
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "plugin":
			plugin = a.Value.String()
		case "stream":
			stream = a.Value.String()
		}
		return true
	})
	if plugin == "" || (stream != "stdout" && stream != "stderr") {
		if !h.inner.Enabled(ctx, r.Level) {
			return nil
		}
		if !h.json && !h.grouped && multiline(r) {
			return h.writeFields(recordFields(r, h.attrs))
		}
		return h.inner.Handle(ctx, r)
	}
	return h.forward(ctx, r, plugin, stream)
}

// multiline reports whether the record's message or a string attribute
// has several lines: a WASM plugin's log message with a stack trace.
func multiline(r slog.Record) bool {
	found := strings.Contains(strings.TrimRight(r.Message, "\n"), "\n")
	r.Attrs(func(a slog.Attr) bool {
		found = found || (a.Value.Kind() == slog.KindString && strings.Contains(strings.TrimRight(a.Value.String(), "\n"), "\n"))
		return !found
	})
	return found
}

// recordFields returns the fields of r as slog's text handler writes
// them: time (with milliseconds), level, msg, the handler's attrs, the
// record's.
func recordFields(r slog.Record, attrs []slog.Attr) fields {
	fs := fields{{key: "time", value: r.Time.Format("2006-01-02T15:04:05.000Z07:00")}, {key: "level", value: r.Level.String()},
		{key: "msg", value: r.Message}}
	for _, a := range attrs {
		fs = append(fs, field{key: a.Key, value: a.Value.String()})
	}
	r.Attrs(func(a slog.Attr) bool {
		fs = append(fs, field{key: a.Key, value: a.Value.String()})
		return true
	})
	return fs
}

// writeFields writes a text line of fs (a value of several lines below
// it, see fields.text) in one write.
func (h *pluginLines) writeFields(fs fields) error {
	_, err := io.WriteString(h.w, fs.text()+"\n")
	return err
}

// forward writes the plugin's line r.Message.
func (h *pluginLines) forward(ctx context.Context, r slog.Record, plugin, stream string) error {
	line := strings.TrimRight(r.Message, "\r\n")
	fs, ok := parseLogLine(line)
	if !ok {
		// Not a log line: a record of its own.
		if !h.inner.Enabled(ctx, r.Level) {
			return nil
		}
		rec := slog.NewRecord(r.Time, r.Level, line, r.PC)
		rec.AddAttrs(slog.String("plugin", plugin), slog.String("stream", stream))
		return h.inner.Handle(ctx, rec)
	}
	if lvl, ok := fieldLevel(fs); ok && lvl < h.level {
		return nil
	}
	if _, has := fs.get("plugin"); !has {
		fs = append(fs, field{key: "plugin", value: plugin})
	}
	if !h.json {
		return h.writeFields(fs)
	}
	b, err := fs.marshalJSON()
	if err != nil {
		return err
	}
	_, err = h.w.Write(append(b, '\n'))
	return err
}

// WithAttrs applies to the records of the inner handler; a plugin's
// forwarded lines keep their own attributes.
func (h *pluginLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(attrs)
	c.attrs = append(slices.Clip(h.attrs), attrs...)
	return &c
}

// WithGroup applies to the records of the inner handler.
func (h *pluginLines) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	c.grouped = true
	return &c
}

// field is one key=value of a log line; raw is the value's JSON text when
// the line was JSON (so that numbers and objects stay what they were).
type field struct {
	key, value string
	raw        json.RawMessage
}

// fields are a log line's key=value pairs, in order.
type fields []field

func (fs fields) get(key string) (string, bool) {
	for _, f := range fs {
		if f.key == key {
			return f.value, true
		}
	}
	return "", false
}

// text writes the fields as slog's text handler does: key=value,
// separated by spaces, values quoted where needed; except that a value
// of several lines (a stack trace) is written below the line, indented,
// one line a line, rather than as one quoted string of \n escapes: its
// key says "(below)".
func (fs fields) text() string {
	var b, below strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := strings.TrimRight(f.value, "\n")
		if !strings.Contains(v, "\n") {
			b.WriteString(f.key + "=" + textValue(f.value))
			continue
		}
		b.WriteString(f.key + "=(below)")
		below.WriteString("\n    " + f.key + ":")
		for _, l := range strings.Split(v, "\n") {
			below.WriteString("\n        " + l)
		}
	}
	return b.String() + below.String()
}

// marshalJSON writes the fields as one JSON object, in order; time and
// level first, as slog's JSON handler writes them.
func (fs fields) marshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v := []byte(f.raw)
		if v == nil {
			if v, err = json.Marshal(f.value); err != nil {
				return nil, err
			}
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// fieldLevel is the level of a log line's level field.
func fieldLevel(fs fields) (slog.Level, bool) {
	v, ok := fs.get("level")
	if !ok {
		return 0, false
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return 0, false
	}
	return l, true
}

// parseLogLine reads a log line of slog's text handler (time=... level=...
// msg=... key=value ..., values quoted as Go strings where needed) or of
// its JSON handler (one object). It reports false for other lines.
func parseLogLine(line string) (fields, bool) {
	if strings.HasPrefix(line, "{") {
		return parseJSONLine(line)
	}
	if !strings.HasPrefix(line, "time=") {
		return nil, false
	}
	var out fields
	rest := line
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return nil, false
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return nil, false
			}
			value, _ = strconv.Unquote(q)
			after = after[len(q):]
		} else {
			value, after, _ = strings.Cut(after, " ")
			after = " " + after
		}
		out = append(out, field{key: key, value: value})
		rest = strings.TrimLeft(after, " ")
	}
	if _, ok := out.get("msg"); !ok {
		return nil, false
	}
	return out, true
}

// parseJSONLine reads a line of slog's JSON handler, its values as
// strings (numbers and nested objects as their JSON text).
func parseJSONLine(line string) (fields, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out fields
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		out = append(out, field{key: key, value: s, raw: raw})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || dec.More() {
		return nil, false
	}
	if _, ok := out.get("msg"); !ok {
		return nil, false
	}
	if _, ok := out.get("time"); !ok {
		out = append(fields{{key: "time", value: time.Now().Format(time.RFC3339Nano)}}, out...)
	}
	return out, true
}

// textValue quotes s as slog's text handler does when needed.
func textValue(s string) string {
	if s == "" || strings.ContainsAny(s, " =\"") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}
