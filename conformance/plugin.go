package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/internal/nriconn"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Names of the plugin checks, as they appear in a Report. The checks of the
// subscribed events are named by EventCheckName. CheckLatency and
// CheckProbe are informational, and so is CheckStateChange, reported only
// for a plugin that has no RPC of its own for some subscribed event (see
// api.StateChangeEvents). A WASM plugin module (see
// PluginConfig.Command) is loaded instead of launched (CheckLoads), and
// CheckRegisters, CheckIdentity and CheckCloses, which check a
// connection, are reported skipped for it.
const (
	CheckRegisters    = "registers within the timeout"
	CheckIdentity     = "valid name and index"
	CheckConfigure    = "answers Configure"
	CheckSubscription = "subscription valid"
	CheckSyncSingle   = "answers Synchronize (one part)"
	CheckSyncChunked  = "answers Synchronize (4 parts)"
	CheckWellFormed   = "no malformed adjustments"
	CheckConsistent   = "no conflicting adjustments"
	CheckLatency      = "event latency"
	CheckStateChange  = "events through StateChange"
	CheckProbe        = "unsubscribed events"
	CheckStaysUp      = "stays up after unsubscribed events"
	CheckShutdown     = "answers Shutdown"
	CheckCloses       = "exits or disconnects when the socket closes"
)

// EventCheckName is the name of the check that delivers event ev.
func EventCheckName(ev api.Event) string { return "answers " + ev.Name() }

// Identity of the checker as a runtime, sent in ConfigureRequest.
const (
	CheckerRuntimeName    = "nrikit-conformance"
	CheckerRuntimeVersion = "v0.1.0"
)

// DefaultPluginName is the IDX-NAME a launched plugin is given unless
// PluginConfig.Name says otherwise.
const DefaultPluginName = "10-check-target"

// Defaults of PluginConfig's timeouts.
const (
	DefaultExitTimeout   = 5 * time.Second
	DefaultAcceptTimeout = 60 * time.Second
)

// PluginConfig says which plugin CheckPlugin checks and how.
type PluginConfig struct {
	// Command launches the plugin as a runtime would: with a socket pair
	// as file descriptor 3 and NRI_PLUGIN_SOCKET, NRI_PLUGIN_NAME and
	// NRI_PLUGIN_IDX in its environment. Exactly one of Command, Listen
	// and Listener must be set.
	//
	// A Command of one file that starts with the WebAssembly magic
	// (\0asm, version 1), whatever its name and mode, is a WASM plugin
	// module: it is loaded in-process, as nrikit's runtime loads one from
	// its plugin directory, and driven through its exports.
	Command []string
	// Env is added to a launched plugin's environment (KEY=VALUE).
	Env []string
	// Listen is a unix socket path on which the checker accepts one
	// external plugin.
	Listen string
	// Listener, instead of Listen, is a listener the checker accepts one
	// external plugin from; the checker closes it.
	Listener net.Listener
	// Name is the plugin's IDX-NAME: what a launched or WASM plugin is
	// told and, if set for an external plugin, the identity it must
	// register with. A launched or WASM plugin's default is the name of
	// its file if that is IDX-NAME, as a runtime names the plugins of its
	// plugin directory ("50-mine", "50-mine.wasm"), else
	// DefaultPluginName.
	Name string
	// Config is sent as ConfigureRequest.config.
	Config string
	// SupportedEvents is the event mask the checker advertises and
	// delivers; 0 means api.AllEvents.
	SupportedEvents api.EventMask
	// RegistrationTimeout bounds the wait for RegisterPlugin (default
	// api.DefaultRegistrationTimeout).
	RegistrationTimeout time.Duration
	// RequestTimeout bounds each request to the plugin, including the
	// write of the request to its socket (default
	// api.DefaultRequestTimeout).
	RequestTimeout time.Duration
	// ExitTimeout bounds the wait for the plugin to exit or disconnect
	// after the checker closed the socket (default DefaultExitTimeout).
	ExitTimeout time.Duration
	// AcceptTimeout bounds the wait for an external plugin to connect
	// (default DefaultAcceptTimeout).
	AcceptTimeout time.Duration
	// Output receives a copy of a launched plugin's stdout and stderr,
	// or of a WASM plugin's log (its output and the host's messages).
	Output io.Writer
	// WASMCacheDir is the on-disk compilation cache of a WASM plugin
	// module (created if missing): a module compiled once loads in a
	// fraction of the time. "" for none.
	WASMCacheDir string
	// Policy, if set, is an administrator's policy of plugin grants that
	// the checker applies as a runtime with it does: the checker's pods
	// are brought into the plugin's grant's where as well as its scope,
	// and CheckGrant fails if an answer makes changes the grant does not
	// allow (which the runtime would refuse).
	Policy *policy.Policy
}

func (cfg PluginConfig) withDefaults() (PluginConfig, error) {
	modes := 0
	for _, set := range []bool{len(cfg.Command) > 0, cfg.Listen != "", cfg.Listener != nil} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return cfg, errors.New("exactly one of Command, Listen and Listener must be set")
	}
	if cfg.Name == "" && len(cfg.Command) > 0 {
		cfg.Name = DefaultPluginName
		if base := filepath.Base(cfg.Command[0]); base != "" {
			if _, _, err := api.ParsePluginName(base); err == nil {
				cfg.Name = base
			}
		}
	}
	if cfg.Name != "" {
		if _, _, err := api.ParsePluginName(cfg.Name); err != nil {
			return cfg, fmt.Errorf("plugin name %q: %w", cfg.Name, err)
		}
	}
	if cfg.SupportedEvents == 0 {
		cfg.SupportedEvents = api.AllEvents
	}
	if u := cfg.SupportedEvents.Unknown(); u != 0 {
		return cfg, fmt.Errorf("supported events contain unknown bits 0x%x", int32(u))
	}
	defaultDuration(&cfg.RegistrationTimeout, api.DefaultRegistrationTimeout)
	defaultDuration(&cfg.RequestTimeout, api.DefaultRequestTimeout)
	defaultDuration(&cfg.ExitTimeout, DefaultExitTimeout)
	defaultDuration(&cfg.AcceptTimeout, DefaultAcceptTimeout)
	return cfg, nil
}

func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// pluginCheck is one run of CheckPlugin.
type pluginCheck struct {
	cfg   PluginConfig
	rec   recorder
	sess  *pluginSession // nil for a WASM plugin
	proc  *process       // nil for an external or WASM plugin
	wasm  *wasmTarget    // nil unless a WASM plugin
	world *world

	// plugin is the checked plugin's Plugin service: the session's
	// client, or the WASM module's.
	plugin api.PluginService
	// inst is the plugin as events name it.
	inst *api.PluginInstance
	// configureReq is the Configure request sent.
	configureReq *api.ConfigureRequest

	reg        registration
	full       string // the plugin's IDX-NAME as registered
	subscribed api.EventMask
	// legacy are the events the plugin answered UNIMPLEMENTED to, which
	// go to it as StateChange from then on (see deliver);
	// throughStateChange are the subscribed events it answered so.
	legacy, throughStateChange api.EventMask
	// scope is the plugin's declared scope; nil if it has none (or one
	// that matches everything). outsidePod and outsideCtr are outside it
	// (nil if the checker could not make such objects).
	scope      *filter.Filter
	outsidePod *api.PodSandbox
	outsideCtr *api.Container
	found      findings
	latency    []string
}

// CheckPlugin runs the plugin checks against one plugin and reports each.
// It returns an error only if the check could not be set up (the plugin
// could not be started, no external plugin connected); every misbehaviour
// of the plugin is a failed check in the report.
func CheckPlugin(ctx context.Context, cfg PluginConfig) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(cfg.Command) > 0 && isWASMModule(cfg.Command[0]) {
		return checkWASM(ctx, cfg)
	}
	c := &pluginCheck{cfg: cfg, world: newWorld()}
	var conn net.Conn
	switch {
	case len(cfg.Command) > 0:
		idx, name, _ := api.ParsePluginName(cfg.Name)
		c.proc, conn, err = launch(cfg.Command, idx, name, cfg.Env, cfg.Output)
	case cfg.Listener != nil:
		conn, err = acceptFrom(ctx, cfg.Listener, cfg.AcceptTimeout)
	default:
		conn, err = acceptOne(ctx, cfg.Listen, cfg.AcceptTimeout)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if c.sess != nil {
			_ = c.sess.close()
		}
		if c.proc != nil {
			c.proc.kill()
		}
	}()
	ok, err := c.connect(conn)
	if err != nil {
		return nil, err
	}
	if ok {
		c.run(ctx)
	}
	return &c.rec.report, nil
}

// connect sets the checker's end of the NRI connection up on conn and
// reports whether it could. A connection that had ended before the
// logical connections were open (nriconn.ErrEnded: the plugin closed the
// socket or sent garbage at once) is the plugin's doing, as the same end
// a moment later would be, so it fails CheckRegisters with the reason a
// close after the setup gives: a plugin that exits at once fails its
// checks whichever comes first, its exit or the setup. Any other error is
// the check's own and is returned.
func (c *pluginCheck) connect(conn net.Conn) (bool, error) {
	sess, err := newPluginSession(conn, c.cfg.RequestTimeout)
	if errors.Is(err, nriconn.ErrEnded) {
		c.rec.fail(CheckRegisters, 0, "%s before RegisterPlugin", c.goneWith(err))
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("setting up the connection to the plugin: %w", err)
	}
	c.sess, c.plugin = sess, sess.plugin
	return true, nil
}

// acceptFrom accepts one connection from l within d and closes l.
func acceptFrom(ctx context.Context, l net.Listener, d time.Duration) (net.Conn, error) {
	type deadliner interface{ SetDeadline(time.Time) error }
	defer l.Close()
	if dl, ok := l.(deadliner); ok {
		if err := dl.SetDeadline(time.Now().Add(d)); err != nil {
			return nil, fmt.Errorf("setting the accept deadline: %w", err)
		}
	}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	conn, err := l.Accept()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("no plugin connected to %s within %s", l.Addr(), d)
		}
		return nil, fmt.Errorf("waiting for a plugin on %s: %w", l.Addr(), err)
	}
	return conn, nil
}

func (c *pluginCheck) run(ctx context.Context) {
	if !c.register(ctx) || !c.identity() || !c.configure(ctx) {
		return
	}
	c.reg.answer <- nil
	c.drive(ctx)
	c.closes(ctx)
	c.scopeKept(ctx)
}

// drive runs the checks of a configured plugin, up to Shutdown.
func (c *pluginCheck) drive(ctx context.Context) {
	c.synchronizeSingle(ctx)
	c.synchronizeChunked(ctx)
	c.events(ctx)
	c.report()
	c.probe(ctx)
	c.shutdown(ctx)
}

// gone describes why the plugin is unreachable: the connection's failure
// and, for a launched plugin, how it exited.
func (c *pluginCheck) gone() string {
	if c.wasm != nil {
		return c.wasm.gone()
	}
	return c.goneWith(c.sess.mux.Err())
}

// goneWith describes a connection that ended with err (nil if it was
// closed cleanly) and, if the plugin process exits soon, how it exited.
func (c *pluginCheck) goneWith(err error) string {
	reason := "connection closed"
	if err != nil {
		reason = "connection closed: " + err.Error()
	}
	if c.proc != nil && c.proc.waitExit(context.Background(), 500*time.Millisecond) {
		reason += "; plugin " + c.proc.exitDescription()
	}
	return reason
}

func (c *pluginCheck) register(ctx context.Context) bool {
	start := time.Now()
	timer := time.NewTimer(c.cfg.RegistrationTimeout)
	defer timer.Stop()
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	select {
	case c.reg = <-c.sess.registrations:
		c.full = api.FullPluginName(c.reg.req.GetPluginIdx(), c.reg.req.GetPluginName())
		c.inst = &api.PluginInstance{Name: c.reg.req.GetPluginName(), Index: c.reg.req.GetPluginIdx()}
		c.rec.pass(CheckRegisters, time.Since(start), "RegisterPlugin{name %q, index %q, NRI version %q}",
			c.reg.req.GetPluginName(), c.reg.req.GetPluginIdx(), c.reg.req.GetNRIVersion())
		return true
	case <-exited:
		c.rec.fail(CheckRegisters, time.Since(start), "plugin %s before registering", c.proc.exitDescription())
	case <-c.sess.done():
		c.rec.fail(CheckRegisters, time.Since(start), "%s before RegisterPlugin", c.gone())
	case <-timer.C:
		c.rec.fail(CheckRegisters, time.Since(start), "no RegisterPlugin within %s", c.cfg.RegistrationTimeout)
	case <-ctx.Done():
		c.rec.fail(CheckRegisters, time.Since(start), "check cancelled: %v", ctx.Err())
	}
	return false
}

// reject answers RegisterPlugin with an error, as nrikit's runtime does,
// and gives the answer time to leave before the connection is closed.
// A WASM plugin has no registration to answer.
func (c *pluginCheck) reject(code codes.Code, format string, args ...any) {
	if c.sess == nil {
		return
	}
	c.reg.answer <- status.Errorf(code, format, args...)
	select {
	case <-time.After(answerGrace):
	case <-c.sess.done():
	}
}

func (c *pluginCheck) identity() bool {
	name, idx := c.reg.req.GetPluginName(), c.reg.req.GetPluginIdx()
	var problem error
	if err := api.CheckPluginName(name); err != nil {
		problem = err
	} else if err := api.CheckPluginIndex(idx); err != nil {
		problem = err
	} else if c.cfg.Name != "" && c.full != c.cfg.Name {
		problem = fmt.Errorf("registered as %q, but the runtime knows the plugin as %q", c.full, c.cfg.Name)
	}
	if problem != nil {
		c.rec.fail(CheckIdentity, 0, "%v", problem)
		c.reject(codes.InvalidArgument, "plugin %q: %v", c.full, problem)
		return false
	}
	c.rec.pass(CheckIdentity, 0, "%s", c.full)
	return true
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func (c *pluginCheck) configure(ctx context.Context) bool {
	req := &api.ConfigureRequest{
		Config:              c.cfg.Config,
		RuntimeName:         CheckerRuntimeName,
		RuntimeVersion:      CheckerRuntimeVersion,
		RegistrationTimeout: ms(c.cfg.RegistrationTimeout),
		RequestTimeout:      ms(c.cfg.RequestTimeout),
		NRIVersion:          api.NRIVersion,
		SupportedEvents:     int32(c.cfg.SupportedEvents),
		MaxRequestTimeout:   ms(c.cfg.RequestTimeout),
		SynchronizeTimeout:  ms(c.cfg.RequestTimeout),
	}
	c.configureReq = req
	cctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := c.plugin.Configure(cctx, req)
	d := time.Since(start)
	if err != nil {
		c.rec.fail(CheckConfigure, d, "%s", describeCallError(err))
		reason := describeCallError(err)
		if st, ok := status.FromError(err); ok && st.Code() != codes.DeadlineExceeded {
			reason = st.Message()
		}
		c.reject(codes.FailedPrecondition, "plugin %q rejected its configuration: %s", c.full, reason)
		return false
	}
	c.rec.pass(CheckConfigure, d, "failure policy: fail_request=%t keep_connected=%t; requested timeout %d ms; scope: %s",
		resp.GetFailurePolicy().GetFailRequest(), resp.GetFailurePolicy().GetKeepConnected(), resp.GetRequestTimeout(),
		describeScope(resp.GetScope()))

	events := api.EventMask(resp.GetEvents())
	supported := c.cfg.SupportedEvents
	switch {
	case events.Unknown() != 0:
		reason := fmt.Sprintf("subscription 0x%x contains unknown event bits 0x%x", int32(events), int32(events.Unknown()))
		c.rec.fail(CheckSubscription, 0, "%s", reason)
		c.reject(codes.InvalidArgument, "plugin %q: %s", c.full, reason)
		return false
	case events&^supported != 0:
		extra := events &^ supported
		reason := fmt.Sprintf("subscribed to events this runtime does not support: %s (0x%x); supported: %s",
			extra, int32(extra), supported)
		c.rec.fail(CheckSubscription, 0, "%s", reason)
		c.reject(codes.InvalidArgument, "plugin %q %s", c.full, reason)
		return false
	case events == 0:
		c.subscribed = supported
		c.rec.pass(CheckSubscription, 0, "0: all events (%s)", supported)
	default:
		c.subscribed = events
		c.rec.pass(CheckSubscription, 0, "%s (0x%x)", events, int32(events))
	}
	return c.checkScope(resp)
}
