package stub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	nrikit "github.com/nrikit/nrikit/stub"

	nrilog "github.com/containerd/nri/pkg/log"
	nrinet "github.com/containerd/nri/pkg/net"
)

// Option configures a stub created with New. Options apply in the order
// given, after the plugin's name and index were taken from the
// environment (NRI_PLUGIN_NAME, NRI_PLUGIN_IDX), as upstream's do.
type Option func(*options) error

// options is what the options set.
type options struct {
	name, idx string
	logger    nrilog.Logger
	onClose   func()
	conn      net.Conn
	native    []nrikit.Option
}

// WithPluginName sets the name the plugin registers with, overriding the
// one the runtime launched it with (NRI_PLUGIN_NAME), as upstream's does.
func WithPluginName(name string) Option {
	return func(o *options) error {
		if o.name != "" {
			o.logger.Infof(context.Background(), "Plugin name overridden: %q (previously %q)", name, o.name)
		}
		o.name = name
		return nil
	}
}

// WithPluginIdx sets the index the plugin registers with. As upstream's,
// it fails if the index is already set: by the runtime that launched the
// plugin (NRI_PLUGIN_IDX) or by an earlier WithPluginIdx.
func WithPluginIdx(idx string) Option {
	return func(o *options) error {
		if o.idx != "" {
			return fmt.Errorf("plugin ID already set (%q)", o.idx)
		}
		o.idx = idx
		return nil
	}
}

// WithSocketPath sets the runtime's socket an external plugin dials.
func WithSocketPath(path string) Option { return native(nrikit.WithSocketPath(path)) }

// WithConnection uses conn, an established connection to the runtime.
func WithConnection(conn net.Conn) Option {
	return func(o *options) error {
		o.conn = conn
		return nil
	}
}

// WithDialer dials the runtime's socket with d.
func WithDialer(d func(string) (net.Conn, error)) Option { return native(nrikit.WithDialer(d)) }

// WithTTRPCOptions adds ttrpc client and server options.
func WithTTRPCOptions(clientOpts []ttrpc.ClientOpts, serverOpts []ttrpc.ServerOpt) Option {
	return native(nrikit.WithTTRPCOptions(clientOpts, serverOpts))
}

// WithLogger sets the logger of the stub's messages (nrikit's stub's
// records, their attributes written into the message as key=value); the
// default is pkg/log's logger at New.
func WithLogger(logger nrilog.Logger) Option {
	return func(o *options) error {
		if logger != nil {
			o.logger = logger
		}
		return nil
	}
}

// WithFailurePolicy asks the runtime to treat the plugin's failures as
// policy says (see upstream's documentation; runtimes without failure
// policies ignore it).
func WithFailurePolicy(policy *api.FailurePolicy) Option {
	if policy == nil {
		return func(*options) error { return errors.New("nil failure policy") }
	}
	return native(nrikit.WithFailurePolicy(policy))
}

// WithOnClose sets a function called when the connection to the runtime
// ends: lost, shut down by the runtime, or closed by Stop. It runs on a
// goroutine of its own, so it may stop the plugin and wait for it (CRI-O's
// NRI test plugins do, under a sync.Once that the caller of Stop holds);
// Run returns only after it has returned (or after closeHookWait), so a
// hook that exits the process (os.Exit(0), as nri-plugins' do) exits
// before Run's caller sees Run's error, as on upstream's stub.
func WithOnClose(onClose func()) Option {
	return func(o *options) error {
		o.onClose = onClose
		return nil
	}
}

// native adds an option of nrikit's stub.
func native(opt nrikit.Option) Option {
	return func(o *options) error {
		o.native = append(o.native, opt)
		return nil
	}
}

// ensureIdentity completes the name and index as upstream does: from
// the executable's name, IDX-NAME, when the index is unset; the
// executable's name is the name when only the index is set.
func (o *options) ensureIdentity(exe string) error {
	if o.idx != "" && o.name != "" {
		return nil
	}
	base := filepath.Base(exe)
	if o.idx != "" {
		o.name = base
		return nil
	}
	idx, name, err := api.ParsePluginName(base)
	if err != nil {
		return err
	}
	o.idx, o.name = idx, name
	return nil
}

// connection returns the connection the stub uses instead of dialing:
// the given one, or the runtime's socket a launched plugin inherits
// (NRI_PLUGIN_SOCKET), or nil.
func (o *options) connection() (net.Conn, error) {
	if o.conn != nil {
		return o.conn, nil
	}
	env := os.Getenv(api.PluginSocketEnvVar)
	if env == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(env)
	if err != nil {
		return nil, fmt.Errorf("invalid socket in environment (%s=%q): %w", api.PluginSocketEnvVar, env, err)
	}
	conn, err := nrinet.NewFdConn(fd)
	if err != nil {
		return nil, fmt.Errorf("invalid socket (%d) in environment: %w", fd, err)
	}
	return conn, nil
}
