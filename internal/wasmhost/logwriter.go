//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	wapi "github.com/tetratelabs/wazero/api"
	"google.golang.org/protobuf/encoding/protowire"

	nri "github.com/nrikit/nrikit/api"
)

// maxLine is the longest line a lineWriter logs, and the longest env.log
// message: longer ones are cut to it, saying how long they were, so that
// a guest decides neither the size nor the number of the records it
// causes per line.
const maxLine = 8 << 10

// lineWriter logs what a guest writes to one of its streams, one record
// per line, with the plugin's name.
type lineWriter struct {
	log    *slog.Logger
	level  slog.Level
	stream string

	mu   sync.Mutex
	buf  []byte // the line so far, at most maxLine bytes of it
	size int    // the line's length so far
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.take(p)
			break
		}
		w.take(p[:i])
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// take adds b to the line, keeping its first maxLine bytes.
func (w *lineWriter) take(b []byte) {
	if room := maxLine - len(w.buf); room > 0 {
		w.buf = append(w.buf, b[:min(room, len(b))]...)
	}
	w.size += len(b)
}

// Flush logs a pending partial line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size > 0 {
		w.emit()
	}
}

func (w *lineWriter) emit() {
	w.log.Log(context.Background(), w.level, cutLine(bytes.TrimRight(w.buf, "\r"), w.size), "stream", w.stream)
	w.buf, w.size = w.buf[:0], 0
}

// cutLine returns the first bytes of a line of size bytes, saying how
// long it was if they are not all of it.
func cutLine(first []byte, size int) string {
	if size <= len(first) {
		return string(first)
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(string(first), ""), size)
}

// logFromGuest logs a message a guest passed to env.log: a protobuf
// LogRequest, read in place from the guest's memory (b), the message cut
// to maxLine bytes.
func logFromGuest(ctx context.Context, log *slog.Logger, b []byte) {
	msg, level, err := parseLogRequest(b)
	if err != nil {
		log.Warn("WASM plugin logged an invalid LogRequest", "error", err)
		return
	}
	slevel := slog.LevelDebug
	switch level {
	case nri.LogRequest_LEVEL_INFO:
		slevel = slog.LevelInfo
	case nri.LogRequest_LEVEL_WARN:
		slevel = slog.LevelWarn
	case nri.LogRequest_LEVEL_ERROR:
		slevel = slog.LevelError
	}
	log.Log(ctx, slevel, cutLine(msg[:min(len(msg), maxLine)], len(msg)), "stream", "env.log")
}

// parseLogRequest decodes a LogRequest (msg = 1, level = 2) without
// copying the message, which may be as large as the guest's memory.
func parseLogRequest(b []byte) (msg []byte, level nri.LogRequest_Level, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			msg, n = protowire.ConsumeBytes(b)
		case num == 2 && typ == protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			level = nri.LogRequest_Level(int32(v))
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, 0, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return msg, level, nil
}

// callerKey is the context key of the plugin whose instance is being
// made (see Plugin.instantiate): its _initialize may log through env.log
// before the instance is known to the cache.
type callerKey struct{}

// caller returns the plugin of the calling instance m.
func (c *Cache) caller(ctx context.Context, m wapi.Module) *Plugin {
	if p, ok := ctx.Value(callerKey{}).(*Plugin); ok {
		return p
	}
	if p, ok := c.callers.Load(m); ok {
		return p.(*Plugin)
	}
	return nil
}

// logger returns the logger to use.
func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// memoryLimit returns the memory limit in pages.
func (o *Options) memoryLimit() uint32 {
	if o.MemoryLimitPages != 0 {
		return o.MemoryLimitPages
	}
	return DefaultMemoryLimitPages
}
