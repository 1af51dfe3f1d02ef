package stub

// WithObserveOnly declares that the plugin only observes: it never
// changes anything and never fails a request, as a recorder or an audit
// log does. The declaration is sent with the Configure response (a
// nrikit extension, docs/protocol.md "Observe-only plugins"): a nrikit
// runtime then sends the plugin every event it subscribed to without
// waiting for its answer, so that it adds no round trip to the runtime's
// calls. The plugin sees each event after the event's other plugins (a
// container being created with their adjustments, validation with the
// combined adjustment), and the runtime ignores what it answers: its
// handlers should return no changes and no errors. An upstream runtime
// ignores the declaration and calls the plugin in its turn, waiting for
// it, as any other.
func WithObserveOnly() Option {
	return func(c *config) error {
		c.observeOnly = true
		return nil
	}
}
