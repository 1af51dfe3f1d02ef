package adaptation

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// What a plugin controls is bounded before it reaches the runtime's log:
//
//   - Size: every record's message and string attributes (errors too) are
//     cut to maxLogText bytes, saying how long they were (boundedHandler,
//     around the runtime's logger).
//   - Rate: the records a plugin causes (its output lines, its WASM
//     module's messages, its requests' refusals) and those about external
//     connections that have not registered (refusals, failed
//     registrations) are let through by a token bucket per source
//     ([WithPluginLogLimit]); the others are counted and reported in one
//     summary record, logsSuppressedMsg, before the source's next record
//     that passes (at most once per logSummaryInterval) and when the
//     source is gone (logBudget).
//   - Count: a request naming many objects (updates refused, opt-outs
//     ignored) is one record with the count and the first few IDs
//     (idSample).

const (
	// maxLogText bounds a record's message and each string attribute (the
	// length of a line of a WASM guest's output, see wasmhost).
	maxLogText = 8 << 10
	// logsSuppressedMsg is the message of the summary record.
	logsSuppressedMsg = "log records suppressed"
	// logSummaryInterval is the least time between two summary records
	// of one source while its records are being suppressed.
	logSummaryInterval = time.Second
	// maxLoggedIDs is how many IDs a record about many objects names.
	maxLoggedIDs = 5
)

// logBudget is the token bucket of the log records of one source.
type logBudget struct {
	rate, burst float64
	// out receives the summary records, with the source's attributes.
	out *slog.Logger

	mu         sync.Mutex
	tokens     float64
	last       time.Time // of the last refill
	suppressed int       // since the last summary
	summarized time.Time // when the last summary was written
}

// newLogBudget returns a full budget whose summaries go to out.
func (a *Adaptation) newLogBudget(out *slog.Logger) *logBudget {
	return &logBudget{rate: a.cfg.limits.PluginLogRate, burst: float64(a.cfg.limits.PluginLogBurst), out: out,
		tokens: float64(a.cfg.limits.PluginLogBurst), last: time.Now()}
}

// pluginLogBudget returns a budget for the plugin full.
func (a *Adaptation) pluginLogBudget(full string) *logBudget {
	return a.newLogBudget(a.log.With("plugin", full))
}

// maxExternalLogBudgets bounds the names whose budgets are kept for
// external plugins (see externalLogBudget).
const maxExternalLogBudgets = 256

// externalLogBudget returns the budget of the external plugin full: the
// same one each time a plugin of that name registers, so that
// reconnecting does not refill it. Past maxExternalLogBudgets names,
// further names share one budget.
func (a *Adaptation) externalLogBudget(full string) *logBudget {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.extLogs[full]; b != nil {
		return b
	}
	if len(a.extLogs) < maxExternalLogBudgets {
		if a.extLogs == nil {
			a.extLogs = map[string]*logBudget{}
		}
		b := a.pluginLogBudget(full)
		a.extLogs[full] = b
		return b
	}
	if a.extLogsOthers == nil {
		a.extLogsOthers = a.newLogBudget(a.log.With("source", "other external plugins"))
	}
	return a.extLogsOthers
}

// allow takes a token for a record; if there is none it counts the
// record as suppressed and reports false. Before a record that passes it
// writes the summary of those suppressed, if it is time to.
func (b *logBudget) allow(ctx context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		b.suppressed++
		return false
	}
	b.tokens--
	if b.suppressed > 0 && now.Sub(b.summarized) >= logSummaryInterval {
		b.summarizeLocked(ctx, now)
	}
	return true
}

// flush writes the summary of the records suppressed, if any: the
// source is gone, or done for now.
func (b *logBudget) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.suppressed > 0 {
		b.summarizeLocked(context.Background(), time.Now())
	}
}

func (b *logBudget) summarizeLocked(ctx context.Context, now time.Time) {
	b.out.WarnContext(ctx, logsSuppressedMsg, "suppressed", b.suppressed,
		"rate", b.rate, "burst", int(b.burst))
	b.suppressed, b.summarized = 0, now
}

// logger returns a logger of the records of the budget's source, through
// h.
func (b *logBudget) logger(h slog.Handler) *slog.Logger {
	return slog.New(&limitedHandler{h: h, b: b})
}

// limitedHandler passes the records its budget allows.
type limitedHandler struct {
	h slog.Handler
	b *logBudget
}

func (l *limitedHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *limitedHandler) Handle(ctx context.Context, r slog.Record) error {
	if !l.b.allow(ctx) {
		return nil
	}
	return l.h.Handle(ctx, r)
}

func (l *limitedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &limitedHandler{h: l.h.WithAttrs(as), b: l.b}
}

func (l *limitedHandler) WithGroup(name string) slog.Handler {
	return &limitedHandler{h: l.h.WithGroup(name), b: l.b}
}

// boundedHandler cuts long messages and string attributes (and errors)
// to maxLogText bytes.
type boundedHandler struct{ h slog.Handler }

func (b boundedHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return b.h.Enabled(ctx, level)
}

func (b boundedHandler) Handle(ctx context.Context, r slog.Record) error {
	long := len(r.Message) > maxLogText
	r.Attrs(func(a slog.Attr) bool {
		_, cut := boundAttr(a)
		long = long || cut
		return !long
	})
	if !long {
		return b.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, truncateLog(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		a, _ = boundAttr(a)
		out.AddAttrs(a)
		return true
	})
	return b.h.Handle(ctx, out)
}

func (b boundedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	bounded := make([]slog.Attr, len(as))
	for i, a := range as {
		bounded[i], _ = boundAttr(a)
	}
	return boundedHandler{h: b.h.WithAttrs(bounded)}
}

func (b boundedHandler) WithGroup(name string) slog.Handler {
	return boundedHandler{h: b.h.WithGroup(name)}
}

// boundAttr returns a with its string value (or error) cut to maxLogText
// bytes, and whether it was cut.
func boundAttr(a slog.Attr) (slog.Attr, bool) {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > maxLogText {
			return slog.String(a.Key, truncateLog(s)), true
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			if s := err.Error(); len(s) > maxLogText {
				return slog.String(a.Key, truncateLog(s)), true
			}
		}
	case slog.KindGroup:
		as := v.Group()
		var out []slog.Attr // a copy, once an attribute is cut: the group is the caller's
		for i, ga := range as {
			ba, cut := boundAttr(ga)
			if cut && out == nil {
				out = append([]slog.Attr(nil), as...)
			}
			if out != nil {
				out[i] = ba
			}
		}
		if out != nil {
			return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}, true
		}
	}
	return a, false
}

// truncateLog cuts s to maxLogText bytes (on a UTF-8 boundary), saying
// how long it was.
func truncateLog(s string) string {
	if len(s) <= maxLogText {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:maxLogText], ""), len(s))
}

// idSample counts IDs and keeps the first maxLoggedIDs, for a record
// about many objects.
type idSample struct {
	n     int
	first []string
}

// add counts id.
func (s *idSample) add(id string) {
	if len(s.first) < maxLoggedIDs {
		s.first = append(s.first, id)
	}
	s.n++
}

// String joins the IDs kept, with "..." if there were more.
func (s *idSample) String() string {
	joined := strings.Join(s.first, ",")
	if s.n > len(s.first) {
		joined += ",..."
	}
	return joined
}
