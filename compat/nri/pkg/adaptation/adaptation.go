// Package adaptation is upstream's github.com/containerd/nri/pkg/adaptation
// on nrikit's runtime library (github.com/nrikit/nrikit/adaptation): the
// same constructor, options and event methods, so that a runtime written
// for upstream builds unchanged, with nrikit's plugin handling behind
// them (per-plugin queues, bounded waits, scopes, registration errors
// with reasons).
//
// Where upstream's API and nrikit's differ:
//   - The runtime's SyncFn is called with no lock of the Adaptation held,
//     and the SyncCB it is given returns as soon as the snapshot is taken,
//     with no updates: the plugin's Synchronize is sent afterwards and the
//     updates it asks for are applied through the UpdateFn. A runtime may
//     hold its own lock in SyncFn and around every event call (containerd
//     does); see nrikit's adaptation.SyncFunc.
//   - SyncFn and UpdateFn are given up on when their context ends (the
//     registration and request timeouts, or Stop): nrikit bounds every
//     wait. A call given up on finishes in the background once the
//     runtime lets it (for example when the runtime releases the lock it
//     held while calling Stop), and its result is discarded.
//   - Evictions a plugin asks for outside an event (UpdateContainers) are
//     refused: upstream's UpdateFn cannot carry them.
//   - Logs go to github.com/containerd/log, as upstream's do.
//   - The administrator's policy (nrikit's docs/policy.md) is read from
//     PolicyFileName in the parent directory of the plugin configuration
//     directory (/etc/nri/policy.yaml by default), and reloaded when it
//     changes; without that file, no policy. See [PolicyPath].
//   - With a recording configuration beside the policy file
//     (record.yaml, see [RecordPath]), the runtime records its NRI
//     traffic for nrikit's `nri replay`.
//   - CEL expressions in scopes (nrikit's docs/scope.md), those plugins
//     declare and those of the policy file's where, are evaluated: the
//     runtime links a CEL implementation (nrikit's adaptation.WithCEL).
package adaptation

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/containerd/ttrpc"
	nrikit "github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/record/runtimerec"
	"github.com/nrikit/nrikit/validator"
)

const (
	// DefaultPluginPath is where pre-installed plugins are looked for.
	DefaultPluginPath = nrikit.DefaultPluginDir
	// DefaultPluginConfigPath holds the pre-installed plugins'
	// configuration.
	DefaultPluginConfigPath = nrikit.DefaultConfigDir
	// DefaultPluginRegistrationTimeout is the time a plugin has to
	// register.
	DefaultPluginRegistrationTimeout = api.DefaultRegistrationTimeout
	// DefaultPluginRequestTimeout is the time a plugin has to answer a
	// request.
	DefaultPluginRequestTimeout = api.DefaultRequestTimeout
)

// SyncFn is the runtime's synchronization function: it lists the
// runtime's pods and containers (typically under the runtime's own lock)
// and hands them to the SyncCB.
type SyncFn func(context.Context, SyncCB) error

// SyncCB takes the runtime's pods and containers for a registering
// plugin. On nrikit it returns no updates: see the package documentation.
type SyncCB func(context.Context, []*PodSandbox, []*Container) ([]*ContainerUpdate, error)

// UpdateFn applies container updates plugins ask for on their own and
// returns the ones that failed.
type UpdateFn func(context.Context, []*ContainerUpdate) ([]*ContainerUpdate, error)

// Adaptation hosts NRI plugins for a runtime (nrikit's Adaptation).
type Adaptation struct {
	a        *nrikit.Adaptation
	stopWait time.Duration
	rec      *runtimerec.Recording // see RecordPath
}

// PluginSyncBlock holds off plugin synchronization until Unblock.
type PluginSyncBlock = nrikit.PluginSyncBlock

// Option configures an Adaptation in New.
type Option func(*options) error

// options collects what the Options set.
type options struct {
	nrikit    []nrikit.Option
	validator *DefaultValidatorConfig
	// configDir is the plugin configuration directory, beside which
	// the policy file is.
	configDir string
}

// PolicyFileName is the name of the administrator's policy file, in the
// parent directory of the plugin configuration directory.
const PolicyFileName = "policy.yaml"

// PolicyPath returns the policy file of the plugin configuration
// directory configDir: PolicyFileName in its parent directory
// (/etc/nri/conf.d: /etc/nri/policy.yaml).
func PolicyPath(configDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(configDir)), PolicyFileName)
}

// DefaultValidatorConfig is the default validator's configuration.
type DefaultValidatorConfig = validator.Config

func nativeOption(o nrikit.Option) Option {
	return func(c *options) error { c.nrikit = append(c.nrikit, o); return nil }
}

// WithPluginPath sets where pre-installed plugins are looked for.
func WithPluginPath(path string) Option { return nativeOption(nrikit.WithPluginDir(path)) }

// WithPluginConfigPath sets where pre-installed plugins' configuration is;
// the policy file is looked for in its parent directory (see PolicyPath).
func WithPluginConfigPath(path string) Option {
	return func(c *options) error {
		c.configDir = path
		c.nrikit = append(c.nrikit, nrikit.WithConfigDir(path))
		return nil
	}
}

// WithSocketPath sets the socket external plugins connect to.
func WithSocketPath(path string) Option { return nativeOption(nrikit.WithSocketPath(path)) }

// WithDisabledExternalConnections accepts no external plugins.
func WithDisabledExternalConnections() Option {
	return nativeOption(nrikit.WithDisabledExternalConnections())
}

// WithTTRPCOptions adds options to the ttrpc client calling each plugin
// and the ttrpc server serving it.
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return nativeOption(nrikit.WithTTRPCOptions(clientOpts, serverOpts))
}

// WithMetrics reports plugin calls and the number of plugins to m (nil:
// nothing is reported).
func WithMetrics(m Metrics) Option {
	if m == nil {
		return func(*options) error { return nil }
	}
	return nativeOption(nrikit.WithMetricsRecorder(metricsRecorder{m}))
}

// WithDefaultValidator installs the default validator if cfg enables it.
func WithDefaultValidator(cfg *DefaultValidatorConfig) Option {
	return func(c *options) error { c.validator = cfg; return nil }
}

// WithDeprecationRecorder reports the deprecated features plugins use to
// d (nil: they are only logged).
func WithDeprecationRecorder(d DeprecationRecorder) Option {
	if d == nil {
		return func(*options) error { return nil }
	}
	return nativeOption(nrikit.WithDeprecationRecorder(d))
}

// WithNativeOptions passes options of nrikit's adaptation package (scopes,
// required plugins, failure policies, limits, a logger, a policy) through;
// they apply after the others (adaptation.WithPolicy replaces the policy
// file).
func WithNativeOptions(opts ...nrikit.Option) Option {
	return func(c *options) error { c.nrikit = append(c.nrikit, opts...); return nil }
}

// New creates an Adaptation for the runtime name/version. syncFn and
// updateFn are required.
func New(name, version string, syncFn SyncFn, updateFn UpdateFn, opts ...Option) (*Adaptation, error) {
	if syncFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil SyncFn")
	}
	if updateFn == nil {
		return nil, errors.New("failed to create NRI adaptation, nil UpdateFn")
	}
	o := options{configDir: DefaultPluginConfigPath}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("failed to create NRI adaptation: nil option")
		}
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("failed to apply option: %w", err)
		}
	}
	reg, req := currentTimeouts()
	native := []nrikit.Option{
		nrikit.WithLogger(logger()),
		nrikit.WithRegistrationTimeout(reg),
		nrikit.WithRequestTimeout(req),
		nrikit.WithSyncFunc(syncFunc(syncFn)),
		// A runtime built on upstream's API has no way to ask for CEL,
		// and plugins written for nrikit may declare CEL scopes.
		nrikit.WithCEL(celscope.Compile),
		// Absent: no policy (nrikit logs it).
		nrikit.WithPolicyFile(PolicyPath(o.configDir)),
	}
	if o.validator != nil {
		native = append(native, nrikit.WithDefaultValidator(*o.validator))
	}
	if applied := appliedOption(name); applied != nil {
		native = append(native, applied)
	}
	rec := startRecording(o.configDir)
	if rec != nil {
		native = append(native, rec.Options()...)
	}
	native = append(native, o.nrikit...)
	a, err := nrikit.New(name, version, nil, updateFunc(updateFn), native...)
	if err != nil {
		if rec != nil {
			rec.Close(context.Background())
		}
		return nil, fmt.Errorf("failed to create NRI adaptation: %w", err)
	}
	return &Adaptation{a: a, stopWait: reg + req, rec: rec}, nil
}

// Native returns the nrikit Adaptation behind r, for the features
// upstream's API does not have (Plugins, ServeConn).
func (r *Adaptation) Native() *nrikit.Adaptation { return r.a }

// Start starts the builtin and pre-installed plugins and, unless
// disabled, accepts external ones.
func (r *Adaptation) Start() error {
	return r.a.Start(context.Background())
}

// Stop sends Shutdown to every plugin and disconnects them. It is bounded
// by the registration and request timeouts.
func (r *Adaptation) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), r.stopWait)
	defer cancel()
	if err := r.a.Stop(ctx); err != nil {
		logger().Warn("NRI: stopping plugins", "error", err)
	}
	r.stopRecording(ctx)
}

// BlockPluginSync holds off plugin synchronization until the block is
// released.
func (r *Adaptation) BlockPluginSync() *PluginSyncBlock { return r.a.BlockPluginSync() }

// syncFunc adapts upstream's SyncFn to nrikit's SyncFunc, giving up on a
// SyncFn that has not returned when ctx ends.
func syncFunc(fn SyncFn) nrikit.SyncFunc {
	return func(ctx context.Context, take nrikit.SnapshotFunc) error {
		cb := func(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
			return nil, take(ctx, pods, ctrs)
		}
		_, err := bounded(ctx, func() (struct{}, error) { return struct{}{}, fn(ctx, cb) })
		return err
	}
}

// updateFunc adapts upstream's UpdateFn to nrikit's UpdateFunc.
func updateFunc(fn UpdateFn) nrikit.UpdateFunc {
	return func(ctx context.Context, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		var evictErr error
		if len(evictions) > 0 {
			evictErr = fmt.Errorf("%d container evictions refused: the runtime takes evictions only in answers to events", len(evictions))
		}
		if len(updates) == 0 {
			return nil, evictErr
		}
		failed, err := bounded(ctx, func() ([]*api.ContainerUpdate, error) { return fn(ctx, updates) })
		if errors.Is(err, errGivenUp) {
			failed = updates
		}
		return failed, errors.Join(err, evictErr)
	}
}

// errGivenUp is a runtime callback that did not return in time.
var errGivenUp = errors.New("runtime callback did not return in time")

// bounded runs f and returns its results, or an error wrapping
// errGivenUp and ctx's error once ctx ends first; f then finishes on its
// own goroutine, which ends when the runtime lets f return, and its
// results are discarded.
func bounded[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w: %w", errGivenUp, ctx.Err())
	}
}
