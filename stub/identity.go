package stub

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/nrikit/nrikit/api"
)

// connSource says where a stub's connection comes from.
type connSource int

const (
	// dialSocket: an external plugin dials the runtime's socket.
	dialSocket connSource = iota
	// givenConn: WithConnection.
	givenConn
	// inheritedFD: a plugin launched by the runtime (NRI_PLUGIN_SOCKET).
	inheritedFD
)

// String describes the source for messages.
func (s connSource) String() string {
	switch s {
	case givenConn:
		return "given connection"
	case inheritedFD:
		return "inherited socket"
	default:
		return "runtime socket"
	}
}

// identity is a plugin's name, index and connection source.
type identity struct {
	name, idx string
	source    connSource
	fd        int // for inheritedFD
}

// resolveIdentity determines the plugin's identity from the options, the
// environment (getenv) and the executable's path (exe); see the package
// documentation for the order.
func resolveIdentity(cfg *config, getenv func(string) string, exe string) (identity, error) {
	id := identity{name: cfg.name, idx: cfg.idx, source: dialSocket}
	switch env := getenv(api.PluginSocketEnvVar); {
	case cfg.conn != nil:
		id.source = givenConn
	case env != "":
		fd, err := strconv.Atoi(env)
		if err != nil || fd < 0 {
			return identity{}, fmt.Errorf("stub: invalid %s=%q: want a file descriptor number", api.PluginSocketEnvVar, env)
		}
		id.source, id.fd = inheritedFD, fd
		// The runtime validates the plugin against the name and index
		// it launched it with, so these take precedence.
		if n := getenv(api.PluginNameEnvVar); n != "" {
			id.name = n
		}
		if i := getenv(api.PluginIdxEnvVar); i != "" {
			id.idx = i
		}
	}
	if id.name == "" || id.idx == "" {
		base := filepath.Base(exe)
		if idx, name, err := api.ParsePluginName(base); err == nil {
			if id.idx == "" {
				id.idx = idx
			}
			if id.name == "" {
				id.name = name
			}
		} else if id.name == "" {
			id.name = base
		}
	}
	if err := api.CheckPluginName(id.name); err != nil {
		return identity{}, fmt.Errorf("stub: %w", err)
	}
	if id.idx == "" {
		return identity{}, fmt.Errorf("stub: plugin %q: %w: use WithPluginIdx or name the executable IDX-NAME (such as 10-%s)", id.name, ErrNoIndex, id.name)
	}
	if err := api.CheckPluginIndex(id.idx); err != nil {
		return identity{}, fmt.Errorf("stub: plugin %q: %w", id.name, err)
	}
	return id, nil
}
