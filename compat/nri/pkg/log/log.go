// Package log is upstream's github.com/containerd/nri/pkg/log on nrikit:
// the logger NRI writes through, which a runtime may replace with Set
// (moby does, to prefix NRI's messages and send them to its own log).
//
// Until Set is called, messages go to github.com/containerd/log, the
// logger containerd and CRI-O (through logrus) write to, with the fields
// of nrikit's records as structured fields. Once a Logger is set, the
// runtime library's records (pkg/adaptation) reach it too, their fields
// written into the message as key=value pairs. Set(nil) restores the
// default, where upstream's would panic on the next message.
package log

import (
	"context"

	clog "github.com/containerd/log"

	"github.com/containerd/nri/internal/logsink"
)

// Logger is the interface NRI logs through.
type Logger = logsink.Logger

// Set makes l the logger of NRI's messages (nil: the default).
func Set(l Logger) { logsink.Set(l) }

// Get returns the logger NRI's messages go to.
func Get() Logger {
	if l, ok := logsink.Custom(); ok {
		return l
	}
	return fallback{}
}

// Debugf logs a debug message.
func Debugf(ctx context.Context, format string, args ...any) { Get().Debugf(ctx, format, args...) }

// Infof logs an informational message.
func Infof(ctx context.Context, format string, args ...any) { Get().Infof(ctx, format, args...) }

// Warnf logs a warning.
func Warnf(ctx context.Context, format string, args ...any) { Get().Warnf(ctx, format, args...) }

// Errorf logs an error.
func Errorf(ctx context.Context, format string, args ...any) { Get().Errorf(ctx, format, args...) }

// fallback writes to containerd/log, with the fields ctx carries.
type fallback struct{}

func (fallback) Debugf(ctx context.Context, format string, args ...any) {
	clog.G(ctx).Debugf(format, args...)
}

func (fallback) Infof(ctx context.Context, format string, args ...any) {
	clog.G(ctx).Infof(format, args...)
}

func (fallback) Warnf(ctx context.Context, format string, args ...any) {
	clog.G(ctx).Warnf(format, args...)
}

func (fallback) Errorf(ctx context.Context, format string, args ...any) {
	clog.G(ctx).Errorf(format, args...)
}
