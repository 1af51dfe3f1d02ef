//go:build !nri_no_wasm

package wasmhost

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// maxLine is the longest line a lineWriter logs in one record; longer
// ones are split.
const maxLine = 8 << 10

// lineWriter logs what a guest writes to one of its streams, one record
// per line, with the plugin's name.
type lineWriter struct {
	log    *slog.Logger
	level  slog.Level
	stream string

	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= maxLine {
				w.emit(w.buf[:maxLine])
				w.buf = append(w.buf[:0], w.buf[maxLine:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(w.buf)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a pending partial line.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
}

func (w *lineWriter) emit(line []byte) {
	w.log.Log(context.Background(), w.level, string(bytes.TrimRight(line, "\r")), "stream", w.stream)
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
