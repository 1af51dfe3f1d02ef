package wasmhost

import (
	"context"
	"log/slog"
)

// Options configure a plugin loaded by [Load].
type Options struct {
	// Name names the plugin in logs and errors (IDX-NAME); the file's
	// base name if empty.
	Name string
	// Logger receives the plugin's output and the host's messages about
	// it, each line or message at most 8 KiB; slog.Default() if nil. It
	// decides how many records the plugin may cause.
	Logger *slog.Logger
	// Cache is the compilation cache to use, shared with other plugins
	// (see [Cache]); if nil, the plugin has its own, kept in CacheDir.
	Cache *Cache
	// CacheDir is the directory of the plugin's own on-disk compilation
	// cache (created if missing) if Cache is nil; "" for none. With it, a
	// module compiled once loads without compiling in a later process.
	// It must pass [CheckCacheDir]. Setting both Cache and CacheDir is an
	// error.
	CacheDir string
	// MaxModuleSize caps the size of the module file in bytes; 0 for
	// [DefaultMaxModuleSize]. A larger file is refused before it is read.
	MaxModuleSize int64
	// TrustedFile requires the module file (the file a symbolic link
	// leads to) to be owned by root or the effective user and not
	// writable by its group or others, as a runtime requires of its
	// plugin directory's files (internal/trustedfile). Without it any
	// regular file is read: for a file its user names.
	TrustedFile bool
	// MemoryLimitPages caps the module's linear memory, in 64 KiB pages;
	// 0 for DefaultMemoryLimitPages. A Go guest that needs more exits
	// ("out of memory"), which discards the instance.
	MemoryLimitPages uint32
	// Reinit, if set, is called with each fresh instance that replaces a
	// discarded one, before the call that needs it, under that call's
	// context; call runs a request on the fresh instance (the caller
	// replays its Configure request there). An error fails the call
	// with KindInit and discards the instance again.
	Reinit func(ctx context.Context, call func(ctx context.Context, fn string, req []byte) ([]byte, error)) error
	// MaxMessageSize bounds every answer of the guest, in bytes; 0 for
	// DefaultMaxMessageSize. A larger answer is not read (KindOversize).
	MaxMessageSize int
	// MaxAnswerSize bounds the answers to events (the exports of
	// EventFunc and plugin_state_change), in bytes; 0 for MaxMessageSize.
	MaxAnswerSize int
	// FuelChecks bounds the module's calls by counters it is
	// instrumented with (internal/wasmfuel: at every loop header and
	// function entry, the host checks the call's context every
	// 65536 counts) instead of wazero's close-on-context-done, which
	// exits to the host at every loop header. A Go guest's calls run
	// about 3 times faster; a call is stopped as promptly (within
	// 65536 loop iterations or function calls, or 10 ms of a sleep,
	// of its deadline).
	FuelChecks bool
}

// maxModuleSize returns the module size cap.
func (o *Options) maxModuleSize() int64 {
	if o.MaxModuleSize > 0 {
		return o.MaxModuleSize
	}
	return DefaultMaxModuleSize
}
