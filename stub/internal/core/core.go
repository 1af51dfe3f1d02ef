// Package core serves the requests of an NRI runtime to a plugin's
// handlers, without a transport: requests in, answers out. It is the one
// implementation of what a plugin does with the runtime's requests, and
// its two front ends only move bytes: the stub (package stub) receives
// the requests over ttrpc on its connection to the runtime, the WASM
// guest support (package stub/wasmguest) from the host's calls of the
// module's exports.
//
// A [Plugin] is a plugin's handlers with their configuration and what
// the runtime told it; a [Session] serves one connection's requests (a
// stub makes one per connection, a guest one for its instance). What the
// core does, in both front ends:
//
//   - Configure resolves the subscription: the events the plugin handles
//     ([Config.Subscription], or the Configure handler's non-zero result),
//     restricted to those the runtime delivers as it advertises them, as
//     its NRI version implies, or as the oldest NRI release does when its
//     version is unknown; [Config.Required] events must be among them.
//     The handler gets the runtime's configuration, or
//     [Config.DefaultConfig] when the runtime sends none.
//   - On a runtime that does not evaluate scopes, the session's scope
//     gate enforces [Config.Scope] before every handler, remembering the
//     containers in scope at creation for a scope that can change its mind
//     about a container (see the gate in scope.go).
//   - Handlers are called with a recovered panic turned into an error, an
//     opt-out sentinel turned into the answer's opt-out (RunPodSandbox,
//     CreateContainer) or into success (the others), and a validator's
//     error into a rejection.
//
// The package links neither ttrpc nor, unless the front end compiles a
// scope, the scope filter: a WASM guest stays small.
package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// Level is the severity of a diagnostic; the values are log/slog's.
type Level int

// The levels of the core's diagnostics.
const (
	LevelDebug Level = -4
	LevelInfo  Level = 0
	LevelWarn  Level = 4
	LevelError Level = 8
)

// LogFunc receives the core's diagnostics: a message and key-value pairs,
// as log/slog takes them. The core does not import log/slog, which a WASM
// guest should not have to link.
type LogFunc func(level Level, msg string, kv ...any)

// ObserveFunc is told of every handler call: the handler's name (an
// event name, "Configure", "Synchronize" or "Shutdown"), the time it
// took, the runtime's timeout for it and its error. A nil ObserveFunc
// leaves handler calls untimed.
type ObserveFunc func(handler string, took, timeout time.Duration, err error)

// Config is a plugin's configuration, set by the front end's options.
type Config struct {
	// Subscription replaces the implemented events as the events
	// wanted (0: all implemented).
	Subscription api.EventMask
	// Required are events the runtime must deliver.
	Required api.EventMask
	// Policy is sent with the Configure response.
	Policy *api.FailurePolicy
	// AskTimeout is the request timeout asked of the runtime (0: none).
	AskTimeout time.Duration
	// RegTimeout is the registration timeout until the runtime sends
	// its own.
	RegTimeout time.Duration
	// DefaultConfig is handed to the Configure handler when the runtime
	// sends no configuration.
	DefaultConfig string
	// Scope is sent with the Configure response and enforced by the
	// session on runtimes that do not evaluate scopes.
	Scope *api.PluginScope
	// Matcher is Scope compiled, nil if it did not compile (ScopeErr
	// says why) or there is no scope.
	Matcher Matcher
	// ScopeErr is why Scope did not compile; reported by Configure on a
	// runtime that does not evaluate scopes.
	ScopeErr error
	// Log receives diagnostics (nil: dropped).
	Log LogFunc
	// Observe is told of handler calls (nil: none).
	Observe ObserveFunc
	// RequiredCapabilities are sent with the Configure response: a
	// runtime that tells capabilities refuses the plugin unless it
	// honours them all (see capabilities.go).
	RequiredCapabilities capability.Set
	// ObserveOnly is sent with the Configure response: the plugin only
	// observes (a nrikit runtime then does not wait for its answers).
	ObserveOnly bool
}

// Plugin is a plugin's handlers, its configuration and what the runtime
// told it. Its methods are safe for concurrent use.
type Plugin struct {
	cfg         Config
	log         LogFunc
	h           handlers.Set
	implemented api.EventMask
	// wanted is the subscription before intersection with the runtime's
	// events: Config.Subscription or the implemented events.
	wanted api.EventMask
	// mutable: the scope looks at container fields that plugins can
	// change (annotations; anything, from CEL).
	mutable bool

	mu      sync.Mutex
	info    RuntimeInfo
	dropped api.EventMask // last dropped set that was logged
}

// RuntimeInfo is what the runtime's Configure request told the plugin.
type RuntimeInfo struct {
	RegTimeout, ReqTimeout, SyncTimeout time.Duration
	RuntimeName, RuntimeVersion         string
	// NRIVersion is the runtime's NRI version, reported or inferred.
	NRIVersion string
	// Subscription is the effective subscription after Configure, the
	// wanted one before.
	Subscription api.EventMask
	// Capabilities are the capabilities the runtime honours for the
	// plugin, if it told them (CapabilitiesTold).
	Capabilities     capability.Set
	CapabilitiesTold bool
}

// New collects plugin's handlers and checks cfg against them. Its errors
// name the option at fault, without a package prefix (the front end adds
// its own).
func New(plugin any, cfg Config) (*Plugin, error) {
	h, implemented, err := handlers.Collect(plugin)
	if err != nil {
		return nil, err
	}
	if extra := cfg.Subscription &^ implemented; extra != 0 {
		return nil, fmt.Errorf("WithSubscription: plugin %T has no handlers for %s", plugin, extra)
	}
	if extra := cfg.Required &^ implemented; extra != 0 {
		return nil, fmt.Errorf("WithRequiredEvents: plugin %T has no handlers for %s", plugin, extra)
	}
	wanted := implemented
	if cfg.Subscription != 0 {
		wanted = cfg.Subscription
	}
	log := cfg.Log
	if log == nil {
		log = func(Level, string, ...any) {}
	}
	return &Plugin{
		cfg:         cfg,
		log:         log,
		h:           h,
		implemented: implemented,
		wanted:      wanted,
		mutable:     len(cfg.Scope.GetContainerAnnotations()) > 0 || strings.TrimSpace(cfg.Scope.GetCel()) != "",
		info: RuntimeInfo{
			RegTimeout:   cfg.RegTimeout,
			ReqTimeout:   api.DefaultRequestTimeout,
			Subscription: wanted,
		},
	}, nil
}

// Implemented returns the events the plugin has handlers for.
func (p *Plugin) Implemented() api.EventMask { return p.implemented }

// Runtime returns a snapshot of what the runtime told the plugin.
func (p *Plugin) Runtime() RuntimeInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// RequestTimeout is the runtime's per-request timeout.
func (p *Plugin) RequestTimeout() time.Duration { return p.Runtime().ReqTimeout }

// syncTimeout is the runtime's timeout for one Synchronize part.
func (p *Plugin) syncTimeout() time.Duration {
	info := p.Runtime()
	if info.SyncTimeout > 0 {
		return info.SyncTimeout
	}
	return info.ReqTimeout
}

// adopt records the runtime's description of itself, its timeouts and
// the capabilities it tells, and returns the capabilities it tells and
// the names of them the stub does not know.
func (p *Plugin) adopt(req *api.ConfigureRequest, nriVersion string) (told toldValue, unknown []string) {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	p.mu.Lock()
	defer p.mu.Unlock()
	p.info.RuntimeName, p.info.RuntimeVersion = req.GetRuntimeName(), req.GetRuntimeVersion()
	p.info.NRIVersion = nriVersion
	if v := req.GetRegistrationTimeout(); v > 0 {
		p.info.RegTimeout = ms(v)
	}
	if v := req.GetRequestTimeout(); v > 0 {
		p.info.ReqTimeout = ms(v)
	}
	// A nrikit runtime grants the requested timeout up to its maximum.
	if limit := req.GetMaxRequestTimeout(); p.cfg.AskTimeout > 0 && limit > 0 {
		p.info.ReqTimeout = min(p.cfg.AskTimeout, ms(limit))
	}
	p.info.SyncTimeout = ms(req.GetSynchronizeTimeout())
	told.caps, told.told, unknown = toldCapabilities(req)
	p.info.Capabilities, p.info.CapabilitiesTold = told.caps, told.told
	return told, unknown
}

// configure answers the runtime's Configure request on session s: it
// calls the plugin's Configure handler, resolves the subscription and
// sets the session's scope gate.
func (p *Plugin) configure(ctx context.Context, s *Session, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rt := supportedEvents(req)
	told, unknown := p.adopt(req, rt.nriVersion)
	p.log(LevelInfo, "configuring plugin", "runtime", req.GetRuntimeName(), "version", req.GetRuntimeVersion(),
		"nriVersion", req.GetNRIVersion(), "supported", rt.supported, "basis", rt.basis)
	ctx = p.noteCapabilities(ctx, told, unknown)
	ctx = context.WithValue(ctx, supportedKey{}, rt)

	wanted := p.wanted
	if h := p.h.Configure; h != nil {
		var events api.EventMask
		err := s.invoke(ctx, "Configure", false, func(ctx context.Context) error {
			var err error
			config := req.GetConfig()
			if strings.TrimSpace(config) == "" {
				config = p.cfg.DefaultConfig
			}
			events, err = h(ctx, config, req.GetRuntimeName(), req.GetRuntimeVersion())
			return err
		})
		if err != nil {
			p.log(LevelError, "plugin configuration failed", "error", err)
			return nil, err
		}
		if events != 0 {
			if extra := events &^ p.implemented; extra != 0 {
				err := fmt.Errorf("stub: Configure handler subscribed to events without handlers: %s (0x%x)", extra, uint32(extra))
				p.log(LevelError, "plugin configuration failed", "error", err)
				return nil, err
			}
			wanted = events
		}
	}

	sub, err := resolveSubscription(wanted, p.cfg.Required, rt)
	if err != nil {
		p.log(LevelError, "plugin cannot subscribe", "error", err)
		return nil, err
	}
	p.noteDropped(sub.dropped, rt)

	g, extra, err := p.gateFor(req, sub.events)
	if err != nil {
		p.log(LevelError, "plugin cannot enforce its scope", "error", err)
		return nil, err
	}
	if g != nil {
		p.log(LevelInfo, "the runtime does not evaluate scopes: the stub enforces the plugin's",
			"scope", g.m.String(), "tracking", extra)
	}
	sub.events |= extra
	s.gate.Store(g)

	p.mu.Lock()
	p.info.Subscription = sub.events
	p.mu.Unlock()
	p.log(LevelInfo, "subscribing plugin", "events", sub.events)

	rsp := &api.ConfigureResponse{
		Events:        int32(sub.events),
		FailurePolicy: p.cfg.Policy,
		Scope:         p.cfg.Scope,
		ObserveOnly:   p.cfg.ObserveOnly,
	}
	if p.cfg.AskTimeout > 0 {
		rsp.RequestTimeout = p.cfg.AskTimeout.Milliseconds()
	}
	if !p.cfg.RequiredCapabilities.Empty() {
		rsp.RequiredCapabilities = p.cfg.RequiredCapabilities.Names()
	}
	return rsp, nil
}

// noteDropped logs the events dropped from the subscription, once for
// each different set.
func (p *Plugin) noteDropped(dropped api.EventMask, rt runtimeEvents) {
	p.mu.Lock()
	changed := dropped != p.dropped
	p.dropped = dropped
	p.mu.Unlock()
	if changed && dropped != 0 {
		p.log(LevelInfo, "runtime does not support some events the plugin handles; not subscribing to them",
			"dropped", dropped.String(), "basis", rt.basis)
	}
}
