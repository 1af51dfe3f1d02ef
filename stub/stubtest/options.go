package stubtest

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// Order is the order of the registration handshake.
type Order int

const (
	// NrikitOrder: the runtime calls Configure before it answers
	// RegisterPlugin, and answers it with the reason if it rejects the
	// plugin.
	NrikitOrder Order = iota
	// UpstreamOrder: the runtime answers RegisterPlugin at once, then
	// calls Configure, and closes the connection if that fails, as
	// containerd/nri v0.12.5 does.
	UpstreamOrder
)

type config struct {
	order                       Order
	runtimeName, runtimeVersion string
	nriVersion                  string
	advertised                  api.EventMask
	accepted                    api.EventMask
	pluginConfig                string
	regTimeout, reqTimeout      time.Duration
	maxReqTimeout, syncTimeout  time.Duration
	pods                        []*api.PodSandbox
	ctrs                        []*api.Container
	syncChunk                   int
	rejectCode                  codes.Code
	rejectMsg                   string
	unanswered                  bool
	capabilities                *capability.Set // see WithCapabilities
}

func defaultConfig() config {
	return config{
		runtimeName:    "stubtest",
		runtimeVersion: "v0.0.0",
		nriVersion:     api.NRIVersion,
		regTimeout:     api.DefaultRegistrationTimeout,
		reqTimeout:     api.DefaultRequestTimeout,
	}
}

// writeTimeout bounds the runtime's writes to a plugin: the longest of
// its timeouts.
func (c *config) writeTimeout() time.Duration {
	d := max(c.regTimeout, c.reqTimeout, c.syncTimeout)
	if d == 0 {
		d = api.DefaultRegistrationTimeout
	}
	return d
}

// Option configures a [Runtime].
type Option func(*config) error

// WithOrder selects the order of the registration handshake; the default
// is [NrikitOrder].
func WithOrder(o Order) Option {
	return func(c *config) error {
		if o != NrikitOrder && o != UpstreamOrder {
			return fmt.Errorf("stubtest: invalid order %d", o)
		}
		c.order = o
		return nil
	}
}

// WithRuntime sets the runtime name and version sent in Configure; the
// default is "stubtest", "v0.0.0".
func WithRuntime(name, version string) Option {
	return func(c *config) error {
		c.runtimeName, c.runtimeVersion = name, version
		return nil
	}
}

// WithNRIVersion sets the NRI version sent in Configure; "" sends none,
// as runtimes of NRI v0.11 and older do. The default is [api.NRIVersion].
func WithNRIVersion(v string) Option {
	return func(c *config) error {
		c.nriVersion = v
		return nil
	}
}

// WithSupportedEvents makes the runtime advertise mask in Configure
// (supported_events) and accept only those events. By default nothing is
// advertised and every event is accepted. Advertising its events is how a
// nrikit runtime tells a stub that it evaluates scopes, so a stub with
// stub.WithScope then leaves the filtering to this runtime, which does
// not filter: the plugin sees every event sent. Without it, the stub
// enforces the scope itself.
func WithSupportedEvents(mask api.EventMask) Option {
	return func(c *config) error {
		if mask == 0 || mask.Unknown() != 0 {
			return fmt.Errorf("stubtest: invalid supported events 0x%x", uint32(mask))
		}
		c.advertised, c.accepted = mask, mask
		return nil
	}
}

// WithAcceptedEvents makes the runtime accept only the events in mask,
// without advertising them, like runtimes before nrikit: a plugin that
// subscribes to others is rejected.
func WithAcceptedEvents(mask api.EventMask) Option {
	return func(c *config) error {
		if mask == 0 || mask.Unknown() != 0 {
			return fmt.Errorf("stubtest: invalid accepted events 0x%x", uint32(mask))
		}
		c.accepted = mask
		return nil
	}
}

// WithConfig sets the plugin configuration sent in Configure.
func WithConfig(cfg string) Option {
	return func(c *config) error {
		c.pluginConfig = cfg
		return nil
	}
}

// WithTimeouts sets the registration and request timeouts sent in
// Configure; the request timeout also bounds the runtime's own requests.
// Zero sends no value, as old runtimes do. The defaults are those of
// package api.
func WithTimeouts(registration, request time.Duration) Option {
	return func(c *config) error {
		if registration < 0 || request < 0 {
			return errors.New("stubtest: negative timeout")
		}
		c.regTimeout, c.reqTimeout = registration, request
		return nil
	}
}

// WithMaxRequestTimeout sets the longest request timeout the runtime
// grants a plugin that asks for one (sent as max_request_timeout).
func WithMaxRequestTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return errors.New("stubtest: negative timeout")
		}
		c.maxReqTimeout = d
		return nil
	}
}

// WithSynchronizeTimeout sets the timeout of each Synchronize part (sent
// as synchronize_timeout); the default is the request timeout.
func WithSynchronizeTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return errors.New("stubtest: negative timeout")
		}
		c.syncTimeout = d
		return nil
	}
}

// WithState sets the pods and containers the runtime synchronizes plugins
// with; see also [Runtime.SetState].
func WithState(pods []*api.PodSandbox, ctrs []*api.Container) Option {
	return func(c *config) error {
		c.pods, c.ctrs = pods, ctrs
		return nil
	}
}

// WithSyncChunkSize splits Synchronize into parts of at most n objects
// (pods first, then containers). The default, 0, sends one part.
func WithSyncChunkSize(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return errors.New("stubtest: negative chunk size")
		}
		c.syncChunk = n
		return nil
	}
}

// WithRejectRegistration makes the runtime answer RegisterPlugin with the
// given status and close the connection, without configuring the plugin.
func WithRejectRegistration(code codes.Code, msg string) Option {
	return func(c *config) error {
		if code == codes.OK {
			return errors.New("stubtest: rejection needs an error code")
		}
		c.rejectCode, c.rejectMsg = code, msg
		return nil
	}
}

// WithUnansweredRegistration makes the runtime never answer RegisterPlugin
// and never configure the plugin.
func WithUnansweredRegistration() Option {
	return func(c *config) error {
		c.unanswered = true
		return nil
	}
}

// WithCapabilities makes the runtime tell the plugin caps at Configure
// (ConfigureRequest.capabilities) and refuse it, as a nrikit runtime
// does, if it requires others. Without it the runtime tells none, as an
// older runtime or upstream's.
func WithCapabilities(caps capability.Set) Option {
	return func(c *config) error {
		c.capabilities = &caps
		return nil
	}
}
