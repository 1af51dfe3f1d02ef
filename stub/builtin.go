package stub

import "github.com/nrikit/nrikit/api"

// NewBuiltin returns an [api.PluginService] that dispatches to plugin's
// handlers in-process, exactly as a [Stub] does for requests that arrive
// over a connection, for runtimes that host plugins as Go values. The
// subscription options, [WithFailurePolicy], [WithRequestTimeout],
// [WithScope] and [WithLogger] apply; options about identity and the
// connection are accepted and have no effect. The Shutdown handler is
// called, but nothing stops. The service is safe for concurrent use.
func NewBuiltin(plugin any, opts ...Option) (api.PluginService, error) {
	c, err := newCore(plugin, opts)
	if err != nil {
		return nil, err
	}
	c.name = "builtin"
	if c.cfg.name != "" {
		c.name = c.cfg.name
		if c.cfg.idx != "" {
			c.name = api.FullPluginName(c.cfg.idx, c.cfg.name)
		}
	}
	return newDispatcher(c), nil
}
