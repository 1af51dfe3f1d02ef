package stub

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
)

// core is what a Stub and a builtin plugin share: the plugin's handlers,
// its configuration and what the runtime told it.
type core struct {
	cfg         config
	log         *slog.Logger
	h           handlers
	implemented api.EventMask
	// wanted is the subscription before intersection: WithSubscription
	// or the implemented events.
	wanted api.EventMask
	name   string // IDX-NAME, for messages
	// metrics are recorded by a Stub with WithMetricsAddr (nil: none).
	metrics *stubMetrics
	// scope is the compiled WithScope, for runtimes that do not
	// evaluate it.
	scope plannedScope

	// syncGCPercent is the GC percentage sessions apply while
	// synchronizing (0: none); set by Start (see WithSyncGCPercent).
	syncGCPercent atomic.Int32

	mu      sync.Mutex
	info    runtimeInfo
	dropped api.EventMask // last dropped set that was logged
}

// runtimeInfo is what the runtime's Configure request told the stub.
type runtimeInfo struct {
	regTimeout, reqTimeout, syncTimeout time.Duration
	runtimeName, runtimeVersion         string
	nriVersion                          string
	subscription                        api.EventMask
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
	h, implemented, err := collectHandlers(plugin)
	if err != nil {
		return nil, err
	}
	if extra := cfg.subscription &^ implemented; extra != 0 {
		return nil, fmt.Errorf("stub: WithSubscription: plugin %T has no handlers for %s", plugin, extra)
	}
	if extra := cfg.required &^ implemented; extra != 0 {
		return nil, fmt.Errorf("stub: WithRequiredEvents: plugin %T has no handlers for %s", plugin, extra)
	}
	wanted := implemented
	if cfg.subscription != 0 {
		wanted = cfg.subscription
	}
	return &core{
		cfg:         cfg,
		log:         cfg.logger,
		h:           h,
		implemented: implemented,
		wanted:      wanted,
		scope:       planScope(&cfg),
		info: runtimeInfo{
			regTimeout:   cfg.regTimeout,
			reqTimeout:   api.DefaultRequestTimeout,
			subscription: wanted,
		},
	}, nil
}

// runtime returns a snapshot of what the runtime told the stub.
func (c *core) runtime() runtimeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// requestTimeout is the runtime's per-request timeout.
func (c *core) requestTimeout() time.Duration {
	return c.runtime().reqTimeout
}

// syncTimeout is the runtime's timeout for one Synchronize part.
func (c *core) syncTimeout() time.Duration {
	info := c.runtime()
	if info.syncTimeout > 0 {
		return info.syncTimeout
	}
	return info.reqTimeout
}

// adopt records the runtime's description of itself and its timeouts.
func (c *core) adopt(req *api.ConfigureRequest, nriVersion string) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	c.mu.Lock()
	defer c.mu.Unlock()
	c.info.runtimeName, c.info.runtimeVersion = req.GetRuntimeName(), req.GetRuntimeVersion()
	c.info.nriVersion = nriVersion
	if v := req.GetRegistrationTimeout(); v > 0 {
		c.info.regTimeout = ms(v)
	}
	if v := req.GetRequestTimeout(); v > 0 {
		c.info.reqTimeout = ms(v)
	}
	// A nrikit runtime grants the requested timeout up to its maximum.
	if limit := req.GetMaxRequestTimeout(); c.cfg.askTimeout > 0 && limit > 0 {
		c.info.reqTimeout = min(c.cfg.askTimeout, ms(limit))
	}
	c.info.syncTimeout = ms(req.GetSynchronizeTimeout())
}

// configure answers the runtime's Configure request: it calls the
// plugin's Configure handler and resolves the subscription.
func (c *core) configure(ctx context.Context, d *dispatcher, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rt := supportedEvents(req)
	c.adopt(req, rt.nriVersion)
	c.log.Info("configuring plugin", "plugin", c.name, "runtime", req.GetRuntimeName(),
		"version", req.GetRuntimeVersion(), "nriVersion", req.GetNRIVersion(), "supported", rt.supported, "basis", rt.basis)

	wanted := c.wanted
	if c.h.Configure != nil {
		var events api.EventMask
		err := d.invoke(ctx, "Configure", c.requestTimeout(), func(ctx context.Context) error {
			var err error
			config := req.GetConfig()
			if strings.TrimSpace(config) == "" {
				config = c.cfg.config
			}
			events, err = c.h.Configure(ctx, config, req.GetRuntimeName(), req.GetRuntimeVersion())
			return err
		})
		if err != nil {
			c.log.Error("plugin configuration failed", "plugin", c.name, "error", err)
			return nil, err
		}
		if events != 0 {
			if extra := events &^ c.implemented; extra != 0 {
				err := fmt.Errorf("stub: Configure handler subscribed to events without handlers: %s (0x%x)", extra, uint32(extra))
				c.log.Error("plugin configuration failed", "plugin", c.name, "error", err)
				return nil, err
			}
			wanted = events
		}
	}

	sub, err := resolveSubscription(wanted, c.cfg.required, rt)
	if err != nil {
		c.log.Error("plugin cannot subscribe", "plugin", c.name, "error", err)
		return nil, err
	}
	c.noteDropped(sub.dropped, rt)

	gate, extra, err := c.gateFor(req, sub.events)
	if err != nil {
		c.log.Error("plugin cannot enforce its scope", "plugin", c.name, "error", err)
		return nil, err
	}
	if gate != nil {
		c.log.Info("the runtime does not evaluate scopes: the stub enforces the plugin's", "plugin", c.name,
			"scope", gate.f.String(), "tracking", extra)
	}
	sub.events |= extra
	d.gate.Store(gate)

	c.mu.Lock()
	c.info.subscription = sub.events
	c.mu.Unlock()
	c.log.Info("subscribing plugin", "plugin", c.name, "events", sub.events)

	rsp := &api.ConfigureResponse{
		Events:        int32(sub.events),
		FailurePolicy: c.cfg.policy,
		Scope:         c.cfg.scope,
	}
	if c.cfg.askTimeout > 0 {
		rsp.RequestTimeout = c.cfg.askTimeout.Milliseconds()
	}
	return rsp, nil
}

// noteDropped logs the events dropped from the subscription, once for
// each different set.
func (c *core) noteDropped(dropped api.EventMask, rt runtimeEvents) {
	c.mu.Lock()
	changed := dropped != c.dropped
	c.dropped = dropped
	c.mu.Unlock()
	if changed && dropped != 0 {
		c.log.Info("runtime does not support some events the plugin handles; not subscribing to them",
			"plugin", c.name, "dropped", dropped.String(), "basis", rt.basis)
	}
}
