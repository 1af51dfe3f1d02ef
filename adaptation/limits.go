package adaptation

import (
	"fmt"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/wasmhost"
)

// Limits are the numeric bounds of an [Adaptation]: the time, size and
// count it grants each plugin, and each peer, before it gives up on it or
// refuses it. They are untrusted input's bounds: a plugin, a peer on the
// socket and a file in the plugin directory reach them, not the runtime.
// [DefaultLimits] returns the defaults; [WithLimits] sets them all, and the
// options of one bound ([WithRequestTimeout], ...) set one field each.
// [Adaptation.Limits] returns the values in force.
//
// In a Limits given to [WithLimits], a zero field means its default.
type Limits struct {
	// RegistrationTimeout bounds each step of a plugin's registration:
	// an external plugin's RegisterPlugin after it connects, and any
	// plugin's answer to Configure; also the listing of the runtime's
	// pods and containers for a Synchronize. A plugin that misses it is
	// disconnected (a launched one stopped), with the reason in the log.
	// Default [api.DefaultRegistrationTimeout]; positive.
	RegistrationTimeout time.Duration

	// RequestTimeout bounds a plugin's answer to one event, unless the
	// plugin asks for its own (see MaxPluginRequestTimeout). A plugin that
	// misses it fails the request ([FailureTimeout]), handled by its
	// failure policy: by default the event proceeds without its answer.
	// Default [api.DefaultRequestTimeout]; positive.
	RequestTimeout time.Duration

	// MaxPluginRequestTimeout caps the request timeout a plugin may ask
	// for in ConfigureResponse.request_timeout: a longer one is cut to
	// it. Zero (the default) is RequestTimeout: plugins may shorten their
	// timeout, not lengthen it. Zero or positive.
	MaxPluginRequestTimeout time.Duration

	// SynchronizeTimeout bounds a plugin's answer to each part of its
	// Synchronize (a part carries at most [MaxSyncMessageSize] bytes of
	// pods and containers). A plugin that misses it is disconnected.
	// Default [DefaultSynchronizeTimeout]; positive.
	SynchronizeTimeout time.Duration

	// SynchronizeBudget bounds a plugin's whole Synchronize, every part
	// and the wait for each answer together. A plugin that has not
	// synchronized within it is disconnected. Default
	// [DefaultSynchronizeBudget]; positive.
	SynchronizeBudget time.Duration

	// SynchronizeWait bounds how long a mutating event (RunPodSandbox,
	// CreateContainer, ...) or a validation waits for a plugin that is
	// still synchronizing. After that the event proceeds without the
	// plugin, as for a plugin that timed out ([FailureSynchronizing]):
	// unless the plugin's failure policy is fail_request, or it is
	// required and the event is CreateContainer, which then fail. The
	// plugin still gets the event once it has synchronized, so it sees
	// every object, but its answer is ignored (logged); validations are
	// not delivered late. Zero (the default) is RequestTimeout. Zero or
	// positive.
	SynchronizeWait time.Duration

	// TerminationGrace is how long a launched plugin (and a WASM plugin's
	// last call) has to end after it is asked to: a process is then
	// killed (SIGKILL after SIGTERM). Default [DefaultTerminationGrace];
	// positive.
	TerminationGrace time.Duration

	// MaxPendingConnections bounds the plugin connections that have not
	// completed registration at any one time; a connection beyond it is
	// closed at once and logged. Registered plugins do not count.
	// Default [DefaultMaxPendingConnections]; at least 1.
	MaxPendingConnections int

	// MaxPendingConnectionsPerPeer bounds the connections of one peer
	// process that have not completed registration, so that one local
	// client cannot hold every slot of MaxPendingConnections and starve
	// the registration of other plugins; a connection beyond it is closed
	// at once and logged. The peer is the process that connected, as the
	// socket's SO_PEERCRED reports it (its PID). A connection whose peer
	// is not known (one handed to [Adaptation.ServeConn] that is not a
	// unix socket) counts against MaxPendingConnections only. Default
	// [DefaultMaxPendingConnectionsPerPeer]; at least 1.
	MaxPendingConnectionsPerPeer int

	// MaxInFlightUpdates bounds the Runtime-service requests
	// (UpdateContainers) one plugin has in flight; their bytes together
	// are bounded by [MaxMessageSize]. Further requests are not read from
	// the plugin's connection until one is answered, so a plugin that
	// floods the runtime holds at most this many calls and a bounded
	// number of bytes. Default [DefaultMaxInFlightUpdates]; at least 1.
	MaxInFlightUpdates int

	// MaxAnswerSize bounds the encoded size of one plugin's answer to a
	// mutating event. A larger answer is a failure of that plugin
	// ([FailureOversize], with an [AnswerSizeError]), handled by its
	// failure policy: by default the event proceeds without its answer.
	// Default [DefaultMaxAnswerSize]; 1 to [MaxMessageSize].
	MaxAnswerSize int

	// MaxPluginConfigSize caps the size of a pre-installed plugin's
	// configuration file, which travels in one message. A plugin whose
	// file is larger is not started, with the reason in the log. Default
	// [DefaultMaxPluginConfigSize]; 1 to [MaxMessageSize].
	MaxPluginConfigSize int64

	// PluginLogRate and PluginLogBurst are the token bucket of the log
	// records each plugin may cause: its output lines (a launched
	// plugin's stdout and stderr, a WASM plugin's stdout, stderr and
	// env.log) and the runtime's records about its requests. A
	// pre-installed plugin keeps its budget across restarts, an external
	// plugin across registrations under its name; the records about
	// connections that have not registered yet share one budget. Records
	// beyond it are not logged; a summary record ("log records
	// suppressed", with their count) says how many, before the next
	// record that passes and when the plugin is gone. PluginLogRate is in
	// records per second once the burst is spent: default
	// [DefaultPluginLogRate], positive. PluginLogBurst is the records at
	// once: default [DefaultPluginLogBurst], at least 1.
	PluginLogRate  float64
	PluginLogBurst int

	// MaxWASMModuleSize caps the size of a WASM plugin's module file
	// (default [DefaultMaxWASMModuleSize], 64 MiB, eight times a Go
	// guest's). A larger file is not read: the plugin is not loaded, with
	// the reason in the log. At least 8 (a module's header).
	MaxWASMModuleSize int64

	// MaxConcurrentWASMLoads bounds the WASM plugins that load (read,
	// compile, instantiate) at once. Loading a module without a
	// compilation cache compiles it: about 2.5 s of CPU on two cores and
	// a peak of about 115 MB of RSS for an 8 MB Go guest, so n loads at
	// once cost up to n times that. A plugin beyond it waits for its turn
	// at most WASMLoadTimeout, then is not loaded (logged). Default
	// [DefaultMaxConcurrentWASMLoads]; at least 1.
	MaxConcurrentWASMLoads int

	// WASMLoadTimeout bounds the loading of each WASM plugin: reading,
	// compiling and instantiating its module, and separately its wait for
	// its turn to load (MaxConcurrentWASMLoads). A compilation stops
	// within a fraction of a second of the timeout, or of Stop; the
	// plugin is not loaded (logged). Default [DefaultWASMLoadTimeout];
	// positive.
	WASMLoadTimeout time.Duration

	// WASMMemoryLimit caps the linear memory of each WASM plugin instance,
	// in bytes, rounded down to whole 64 KiB pages; a Go guest's heap
	// lives in this memory. A guest that needs more crashes
	// ([FailureCrashed]). Default [DefaultWASMMemoryLimit], 128 MiB;
	// 64 KiB to 4 GiB.
	WASMMemoryLimit uint64

	// WASMMemoryBudget bounds the linear memory of all WASM plugins
	// together: each loaded plugin reserves its WASMMemoryLimit until it
	// is closed, and a plugin whose limit exceeds what is left is not
	// loaded, with the reason in the log (with [WithRestartLaunched] it
	// is tried again later, when another may have gone). Zero, the
	// default, sets no budget: n WASM plugins may use n times the memory
	// limit. The budget counts linear memory only: each distinct module
	// also keeps its machine code (about 30 MB for an 8 MB Go guest) and
	// each instance a few MB of the host's. Any value.
	WASMMemoryBudget uint64

	// PolicyReloadInterval is how often the Adaptation looks for a change
	// of the policy file of [WithPolicyFile] (its identity, size and
	// modification time). Default [DefaultPolicyReloadInterval];
	// positive.
	PolicyReloadInterval time.Duration
}

// The defaults of the [Limits] fields that have a constant of their own
// (see [DefaultLimits]).
const (
	// DefaultSynchronizeTimeout is the default [Limits.SynchronizeTimeout].
	// A part carries at most [MaxSyncMessageSize] bytes, which a plugin
	// decodes in milliseconds; the generous default leaves room for a
	// plugin that rebuilds its state from the last part.
	DefaultSynchronizeTimeout = 10 * time.Second
	// DefaultSynchronizeBudget is the default [Limits.SynchronizeBudget].
	DefaultSynchronizeBudget = time.Minute
	// DefaultTerminationGrace is the default [Limits.TerminationGrace].
	DefaultTerminationGrace = 2 * time.Second
	// DefaultMaxPendingConnections is the default
	// [Limits.MaxPendingConnections].
	DefaultMaxPendingConnections = 32
	// DefaultMaxPendingConnectionsPerPeer is the default
	// [Limits.MaxPendingConnectionsPerPeer].
	DefaultMaxPendingConnectionsPerPeer = 4
	// DefaultMaxInFlightUpdates is the default [Limits.MaxInFlightUpdates].
	DefaultMaxInFlightUpdates = 16
	// DefaultMaxAnswerSize is the default [Limits.MaxAnswerSize].
	DefaultMaxAnswerSize = 1 << 20
	// DefaultMaxPluginConfigSize is the default
	// [Limits.MaxPluginConfigSize].
	DefaultMaxPluginConfigSize = 1 << 20
	// DefaultPluginLogRate is the default [Limits.PluginLogRate].
	DefaultPluginLogRate = 100
	// DefaultPluginLogBurst is the default [Limits.PluginLogBurst].
	DefaultPluginLogBurst = 1000
	// DefaultMaxWASMModuleSize is the default [Limits.MaxWASMModuleSize].
	DefaultMaxWASMModuleSize = wasmhost.DefaultMaxModuleSize
	// DefaultMaxConcurrentWASMLoads is the default
	// [Limits.MaxConcurrentWASMLoads].
	DefaultMaxConcurrentWASMLoads = 2
	// DefaultWASMLoadTimeout is the default [Limits.WASMLoadTimeout].
	DefaultWASMLoadTimeout = 2 * time.Minute
	// DefaultWASMMemoryLimit is the default [Limits.WASMMemoryLimit].
	DefaultWASMMemoryLimit = wasmhost.DefaultMemoryLimitPages * wasmPageSize
	// DefaultPolicyReloadInterval is the default
	// [Limits.PolicyReloadInterval].
	DefaultPolicyReloadInterval = 10 * time.Second
)

// DefaultLimits returns the default limits: the values an [Adaptation]
// uses for the fields no option sets. MaxPluginRequestTimeout and
// SynchronizeWait are zero, which is RequestTimeout.
func DefaultLimits() Limits {
	return Limits{
		RegistrationTimeout:          api.DefaultRegistrationTimeout,
		RequestTimeout:               api.DefaultRequestTimeout,
		SynchronizeTimeout:           DefaultSynchronizeTimeout,
		SynchronizeBudget:            DefaultSynchronizeBudget,
		TerminationGrace:             DefaultTerminationGrace,
		MaxPendingConnections:        DefaultMaxPendingConnections,
		MaxPendingConnectionsPerPeer: DefaultMaxPendingConnectionsPerPeer,
		MaxInFlightUpdates:           DefaultMaxInFlightUpdates,
		MaxAnswerSize:                DefaultMaxAnswerSize,
		MaxPluginConfigSize:          DefaultMaxPluginConfigSize,
		PluginLogRate:                DefaultPluginLogRate,
		PluginLogBurst:               DefaultPluginLogBurst,
		MaxWASMModuleSize:            DefaultMaxWASMModuleSize,
		MaxConcurrentWASMLoads:       DefaultMaxConcurrentWASMLoads,
		WASMLoadTimeout:              DefaultWASMLoadTimeout,
		WASMMemoryLimit:              DefaultWASMMemoryLimit,
		PolicyReloadInterval:         DefaultPolicyReloadInterval,
	}
}

// LimitError is the refusal of a [Limits] field's value, by [WithLimits]
// or the option of that one bound.
type LimitError struct {
	// Field is the Limits field's name, such as "RequestTimeout".
	Field string
	// Value is the value refused.
	Value any
	// Want says what the field accepts, such as "positive".
	Want string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("adaptation: limit %s is %v: must be %s", e.Field, e.Value, e.Want)
}

// WithLimits sets every bound of the Adaptation to l's: a zero field
// means its default (not a value an earlier option set); options of one
// bound given after it change their field. A field out of its range
// fails [New] with a [LimitError] naming the field and the value.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		l = l.withDefaults()
		if err := l.validate(); err != nil {
			return err
		}
		c.limits = l
		return nil
	}
}

// Limits returns the limits in force: WithLimits's and the options'
// values, else the defaults, with MaxPluginRequestTimeout and
// SynchronizeWait resolved.
func (a *Adaptation) Limits() Limits { return a.cfg.limits }

// setLimit returns the option that sets one field of the limits (set)
// and checks the result.
func setLimit(set func(*Limits)) Option {
	return func(c *config) error {
		l := c.limits
		set(&l)
		if err := l.validate(); err != nil {
			return err
		}
		c.limits = l
		return nil
	}
}

// withDefaults returns l with each zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	orDefault(&l.RegistrationTimeout, d.RegistrationTimeout)
	orDefault(&l.RequestTimeout, d.RequestTimeout)
	orDefault(&l.SynchronizeTimeout, d.SynchronizeTimeout)
	orDefault(&l.SynchronizeBudget, d.SynchronizeBudget)
	orDefault(&l.TerminationGrace, d.TerminationGrace)
	orDefault(&l.MaxPendingConnections, d.MaxPendingConnections)
	orDefault(&l.MaxPendingConnectionsPerPeer, d.MaxPendingConnectionsPerPeer)
	orDefault(&l.MaxInFlightUpdates, d.MaxInFlightUpdates)
	orDefault(&l.MaxAnswerSize, d.MaxAnswerSize)
	orDefault(&l.MaxPluginConfigSize, d.MaxPluginConfigSize)
	orDefault(&l.PluginLogRate, d.PluginLogRate)
	orDefault(&l.PluginLogBurst, d.PluginLogBurst)
	orDefault(&l.MaxWASMModuleSize, d.MaxWASMModuleSize)
	orDefault(&l.MaxConcurrentWASMLoads, d.MaxConcurrentWASMLoads)
	orDefault(&l.WASMLoadTimeout, d.WASMLoadTimeout)
	orDefault(&l.WASMMemoryLimit, d.WASMMemoryLimit)
	orDefault(&l.PolicyReloadInterval, d.PolicyReloadInterval)
	return l
}

// orDefault sets *v to def if it is zero.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// resolved returns l with the fields whose zero is another field's value
// (MaxPluginRequestTimeout, SynchronizeWait) set to it, for New.
func (l Limits) resolved() Limits {
	orDefault(&l.MaxPluginRequestTimeout, l.RequestTimeout)
	orDefault(&l.SynchronizeWait, l.RequestTimeout)
	return l
}

// validate checks each field of l against its range: the one place the
// limits are checked. It returns the first field out of range as a
// *LimitError.
func (l Limits) validate() error {
	const positive, size = "positive", "between 1 and %d"
	for _, c := range []struct {
		field string
		value any
		ok    bool
		want  string
	}{
		{"RegistrationTimeout", l.RegistrationTimeout, l.RegistrationTimeout > 0, positive},
		{"RequestTimeout", l.RequestTimeout, l.RequestTimeout > 0, positive},
		{"MaxPluginRequestTimeout", l.MaxPluginRequestTimeout, l.MaxPluginRequestTimeout >= 0, "zero or positive"},
		{"SynchronizeTimeout", l.SynchronizeTimeout, l.SynchronizeTimeout > 0, positive},
		{"SynchronizeBudget", l.SynchronizeBudget, l.SynchronizeBudget > 0, positive},
		{"SynchronizeWait", l.SynchronizeWait, l.SynchronizeWait >= 0, "zero or positive"},
		{"TerminationGrace", l.TerminationGrace, l.TerminationGrace > 0, positive},
		{"MaxPendingConnections", l.MaxPendingConnections, l.MaxPendingConnections >= 1, positive},
		{"MaxPendingConnectionsPerPeer", l.MaxPendingConnectionsPerPeer, l.MaxPendingConnectionsPerPeer >= 1, positive},
		{"MaxInFlightUpdates", l.MaxInFlightUpdates, l.MaxInFlightUpdates >= 1, positive},
		{"MaxAnswerSize", l.MaxAnswerSize, l.MaxAnswerSize >= 1 && l.MaxAnswerSize <= MaxMessageSize, fmt.Sprintf(size, MaxMessageSize)},
		{"MaxPluginConfigSize", l.MaxPluginConfigSize, l.MaxPluginConfigSize >= 1 && l.MaxPluginConfigSize <= MaxMessageSize, fmt.Sprintf(size, MaxMessageSize)},
		{"PluginLogRate", l.PluginLogRate, l.PluginLogRate > 0, positive},
		{"PluginLogBurst", l.PluginLogBurst, l.PluginLogBurst >= 1, positive},
		{"MaxWASMModuleSize", l.MaxWASMModuleSize, l.MaxWASMModuleSize >= wasmHeaderSize, fmt.Sprintf("at least %d (a module's header)", wasmHeaderSize)},
		{"MaxConcurrentWASMLoads", l.MaxConcurrentWASMLoads, l.MaxConcurrentWASMLoads >= 1, positive},
		{"WASMLoadTimeout", l.WASMLoadTimeout, l.WASMLoadTimeout > 0, positive},
		{"WASMMemoryLimit", l.WASMMemoryLimit, l.WASMMemoryLimit >= wasmPageSize && l.WASMMemoryLimit/wasmPageSize <= maxWASMPages,
			fmt.Sprintf("between 64 KiB and 4 GiB (%d to %d)", wasmPageSize, maxWASMPages*wasmPageSize)},
		{"PolicyReloadInterval", l.PolicyReloadInterval, l.PolicyReloadInterval > 0, positive},
	} {
		if !c.ok {
			return &LimitError{Field: c.field, Value: c.value, Want: c.want}
		}
	}
	return nil
}

const (
	// wasmPageSize is the size of a WebAssembly memory page.
	wasmPageSize = 64 << 10
	// maxWASMPages is the most pages a WebAssembly memory has (4 GiB).
	maxWASMPages = 1 << 16
	// wasmHeaderSize is the size of a WebAssembly module's header: its
	// magic and version.
	wasmHeaderSize = int64(len("\x00asm\x01\x00\x00\x00"))
)

// wasmMemoryPages returns WASMMemoryLimit in whole pages.
func (l Limits) wasmMemoryPages() uint32 { return uint32(l.WASMMemoryLimit / wasmPageSize) }

// The options of one bound each: each sets one field of the Limits (see
// there for what it bounds, its default and its range).

// WithRegistrationTimeout sets [Limits.RegistrationTimeout]: the time a
// plugin has for each step of its registration.
func WithRegistrationTimeout(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.RegistrationTimeout = d })
}

// WithRequestTimeout sets [Limits.RequestTimeout]: the time a plugin has
// to answer one event, unless it asks for its own.
func WithRequestTimeout(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.RequestTimeout = d })
}

// WithMaxPluginRequestTimeout sets [Limits.MaxPluginRequestTimeout]: the
// longest request timeout a plugin may ask for.
func WithMaxPluginRequestTimeout(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.MaxPluginRequestTimeout = d })
}

// WithSynchronizeTimeout sets [Limits.SynchronizeTimeout]: the time a
// plugin has to answer each part of Synchronize.
func WithSynchronizeTimeout(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.SynchronizeTimeout = d })
}

// WithSynchronizeBudget sets [Limits.SynchronizeBudget]: the bound of a
// plugin's whole Synchronize.
func WithSynchronizeBudget(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.SynchronizeBudget = d })
}

// WithSynchronizeWait sets [Limits.SynchronizeWait]: how long an event
// waits for a plugin that is still synchronizing.
func WithSynchronizeWait(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.SynchronizeWait = d })
}

// WithTerminationGrace sets [Limits.TerminationGrace]: how long a
// launched plugin has to exit after SIGTERM before it is killed.
func WithTerminationGrace(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.TerminationGrace = d })
}

// WithMaxPendingConnections sets [Limits.MaxPendingConnections]: the
// connections that have not completed registration at any one time.
func WithMaxPendingConnections(n int) Option {
	return setLimit(func(l *Limits) { l.MaxPendingConnections = n })
}

// WithMaxPendingConnectionsPerPeer sets
// [Limits.MaxPendingConnectionsPerPeer]: the connections of one peer
// process that have not completed registration.
func WithMaxPendingConnectionsPerPeer(n int) Option {
	return setLimit(func(l *Limits) { l.MaxPendingConnectionsPerPeer = n })
}

// WithMaxInFlightUpdates sets [Limits.MaxInFlightUpdates]: the
// UpdateContainers requests one plugin may have in flight.
func WithMaxInFlightUpdates(n int) Option {
	return setLimit(func(l *Limits) { l.MaxInFlightUpdates = n })
}

// WithMaxAnswerSize sets [Limits.MaxAnswerSize]: the encoded size of one
// plugin's answer to a mutating event.
func WithMaxAnswerSize(n int) Option {
	return setLimit(func(l *Limits) { l.MaxAnswerSize = n })
}

// WithMaxPluginConfigSize sets [Limits.MaxPluginConfigSize]: the size of
// a pre-installed plugin's configuration file.
func WithMaxPluginConfigSize(n int64) Option {
	return setLimit(func(l *Limits) { l.MaxPluginConfigSize = n })
}

// WithPluginLogLimit sets [Limits.PluginLogRate] and
// [Limits.PluginLogBurst]: the rate (records per second) and burst of
// log records each plugin may cause.
func WithPluginLogLimit(rate float64, burst int) Option {
	return setLimit(func(l *Limits) { l.PluginLogRate, l.PluginLogBurst = rate, burst })
}

// WithMaxWASMModuleSize sets [Limits.MaxWASMModuleSize]: the size of a
// WASM plugin's module file.
func WithMaxWASMModuleSize(n int64) Option {
	return setLimit(func(l *Limits) { l.MaxWASMModuleSize = n })
}

// WithMaxConcurrentWASMLoads sets [Limits.MaxConcurrentWASMLoads]: the
// WASM plugins that load at once.
func WithMaxConcurrentWASMLoads(n int) Option {
	return setLimit(func(l *Limits) { l.MaxConcurrentWASMLoads = n })
}

// WithWASMLoadTimeout sets [Limits.WASMLoadTimeout]: the time to load
// each WASM plugin, and its wait for its turn to load.
func WithWASMLoadTimeout(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.WASMLoadTimeout = d })
}

// WithWASMMemoryLimit sets [Limits.WASMMemoryLimit]: the linear memory of
// each WASM plugin instance, in bytes.
func WithWASMMemoryLimit(limit uint64) Option {
	return setLimit(func(l *Limits) { l.WASMMemoryLimit = limit })
}

// WithWASMMemoryBudget sets [Limits.WASMMemoryBudget]: the linear memory
// of all WASM plugins together (0: no budget).
func WithWASMMemoryBudget(bytes uint64) Option {
	return setLimit(func(l *Limits) { l.WASMMemoryBudget = bytes })
}

// WithPolicyReloadInterval sets [Limits.PolicyReloadInterval]: how often
// the policy file of [WithPolicyFile] is looked at.
func WithPolicyReloadInterval(d time.Duration) Option {
	return setLimit(func(l *Limits) { l.PolicyReloadInterval = d })
}
