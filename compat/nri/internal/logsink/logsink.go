// Package logsink holds the logger a runtime hands to upstream's pkg/log
// (log.Set), so that pkg/log and pkg/adaptation share it without pkg/log
// exporting more than upstream's names.
package logsink

import (
	"context"
	"sync/atomic"
)

// Logger is upstream's pkg/log.Logger: where NRI's messages go.
type Logger interface {
	Debugf(ctx context.Context, format string, args ...any)
	Infof(ctx context.Context, format string, args ...any)
	Warnf(ctx context.Context, format string, args ...any)
	Errorf(ctx context.Context, format string, args ...any)
}

// holder lets an atomic.Pointer hold an interface value.
type holder struct{ l Logger }

// custom is the logger the runtime set, nil for none. It is process-wide
// because upstream's API (log.Set, log.Get) is: the one package-level
// state of this module.
var custom atomic.Pointer[holder]

// Set makes l the logger of NRI's messages; nil restores the default.
func Set(l Logger) {
	if l == nil {
		custom.Store(nil)
		return
	}
	custom.Store(&holder{l: l})
}

// Custom returns the logger the runtime set, and false if it set none.
func Custom() (Logger, bool) {
	if h := custom.Load(); h != nil {
		return h.l, true
	}
	return nil, false
}
