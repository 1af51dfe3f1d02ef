package stub

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	pcore "github.com/nrikit/nrikit/stub/internal/core"
)

// core is what a Stub and a builtin plugin share: the stub's
// configuration and the plugin, served by the transport-free core
// (stub/internal/core) that the WASM guest support serves too.
type core struct {
	cfg config
	log *slog.Logger
	p   *pcore.Plugin
	// name is the plugin's IDX-NAME, for messages; set before the first
	// request.
	name string
	// metrics pass what a Stub does to its observer (WithObserver; nil: none).
	metrics *stubMetrics

	// syncGCPercent is the GC percentage sessions apply while
	// synchronizing (0: none); set by Start (see WithSyncGCPercent).
	syncGCPercent atomic.Int32
}

// newCore applies the options and collects the plugin's handlers.
func newCore(plugin any, opts []Option) (*core, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("stub: nil option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	c := &core{cfg: cfg, log: cfg.logger}
	matcher, scopeErr := planScope(&cfg)
	p, err := pcore.New(plugin, pcore.Config{
		Subscription:  cfg.subscription,
		Required:      cfg.required,
		Policy:        cfg.policy,
		AskTimeout:    cfg.askTimeout,
		RegTimeout:    cfg.regTimeout,
		DefaultConfig: cfg.config,
		Scope:         cfg.scope,
		Matcher:       matcher,
		ScopeErr:      scopeErr,
		Log:           c.logCore,
		Observe:       c.observe,

		RequiredCapabilities: cfg.requiredCaps,
		ObserveOnly:          cfg.observeOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("stub: %w", err)
	}
	c.p = p
	return c, nil
}

// logCore logs a diagnostic of the core with the plugin's name.
func (c *core) logCore(level pcore.Level, msg string, kv ...any) {
	ctx := context.Background()
	if !c.log.Enabled(ctx, slog.Level(level)) {
		return
	}
	c.log.Log(ctx, slog.Level(level), msg, append([]any{"plugin", c.name}, kv...)...)
}

// observe records a handler call in the metrics and warns of one that
// took longer than the runtime waits.
func (c *core) observe(handler string, took, timeout time.Duration, err error) {
	c.metrics.observe(handler, took, err)
	if timeout > 0 && took > timeout {
		c.log.Warn("plugin handler took longer than the runtime's request timeout",
			"plugin", c.name, "handler", handler, "duration", took, "timeout", timeout)
	}
}

// runtime returns a snapshot of what the runtime told the stub.
func (c *core) runtime() pcore.RuntimeInfo { return c.p.Runtime() }

// implemented returns the events the plugin has handlers for.
func (c *core) implemented() api.EventMask { return c.p.Implemented() }
