package api

import nrikit "github.com/nrikit/nrikit/api"

// Upstream's names of the protocol's default timeouts.
const (
	// DefaultPluginRegistrationTimeout is the time a plugin has to
	// register, nrikit's api.DefaultRegistrationTimeout.
	DefaultPluginRegistrationTimeout = nrikit.DefaultRegistrationTimeout
	// DefaultPluginRequestTimeout is the time a plugin has to answer a
	// request, nrikit's api.DefaultRequestTimeout.
	DefaultPluginRequestTimeout = nrikit.DefaultRequestTimeout
)

// ValidEvents is the mask of every event (nrikit's api.AllEvents).
const ValidEvents = nrikit.AllEvents
