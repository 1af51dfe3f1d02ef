package adaptation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
	"github.com/nrikit/nrikit/policy"
	"google.golang.org/grpc/codes"
)

// Capabilities told to each plugin (docs/protocol.md §5.4): at Configure
// the runtime tells a plugin the adjustment fields, update kinds and
// evictions it will honour for it, which is what the embedding runtime
// applies at all (WithAppliedCapabilities) intersected with the plugin's
// grant; a plugin that requires more is refused at registration.

// ErrMissingCapabilities is the cause of the registration error of a
// plugin that requires capabilities the runtime does not honour for it
// (errors.Is).
var ErrMissingCapabilities = errors.New("plugin requires capabilities the runtime does not honour for it")

// maxRequiredCapabilities bounds the capability names a plugin may
// require: well above the number of capabilities, to leave room for a
// newer plugin's names, it bounds the work a plugin's answer costs.
const maxRequiredCapabilities = 128

// maxNamesShown bounds the unknown capability names a registration error
// quotes (each clipped).
const maxNamesShown = 8

// WithAppliedCapabilities declares what the embedding runtime applies at
// all: the adjustment fields whose merged values its spec generator
// writes into a container's spec, the resource classes its update of a
// running container sets, and whether it evicts. A plugin is told these
// (intersected with its grant) at Configure, and one requiring others is
// refused. A runtime that does not declare is taken to apply everything
// (policy.All), as one that applies the merged adjustment with package
// ocispec does; so, without a policy, every plugin is told every
// capability.
func WithAppliedCapabilities(applied capability.Set) Option {
	return func(c *config) error {
		c.applied = &applied
		return nil
	}
}

// appliedCapabilities is what the runtime applies at all.
func (a *Adaptation) appliedCapabilities() capability.Set {
	if a.cfg.applied == nil {
		return capability.All()
	}
	return *a.cfg.applied
}

// toldCapabilities is what the runtime honours for p: what it applies,
// within p's grant.
func (p *plugin) toldCapabilities() capability.Set {
	g := p.currentGrant()
	if g.Action() == policy.ActionAudit {
		// Nothing is refused: the plugin may do what the runtime applies.
		return p.a.appliedCapabilities()
	}
	return p.a.appliedCapabilities().Intersect(g.Capabilities())
}

// capabilitySet is the wire form of caps.
func capabilitySet(caps capability.Set) *api.CapabilitySet {
	return &api.CapabilitySet{Names: caps.Names()}
}

// checkRequiredCapabilities refuses the registration of plugin full if
// it requires capabilities (by name, as its ConfigureResponse lists them)
// outside told: the reason names the ones missing, so that the plugin and
// the runtime's log say why instead of its adjustments being silently
// ineffective.
func checkRequiredCapabilities(full string, told capability.Set, required []string) *RegistrationError {
	if len(required) == 0 {
		return nil
	}
	if len(required) > maxRequiredCapabilities {
		return registrationError(full, codes.InvalidArgument, nil,
			"plugin %q requires %d capabilities; at most %d names are accepted", full, len(required), maxRequiredCapabilities)
	}
	want, unknown := capability.ParseSet(required)
	missing := told.Missing(want).Names()
	for i, n := range unknown {
		if i == maxNamesShown {
			missing = append(missing, fmt.Sprintf("(%d more unknown)", len(unknown)-i))
			break
		}
		missing = append(missing, fmt.Sprintf("%q (unknown)", clip(n)))
	}
	if len(missing) == 0 {
		return nil
	}
	return registrationError(full, codes.FailedPrecondition, ErrMissingCapabilities,
		"plugin %q requires capabilities this runtime does not honour for it: %s; honoured: %s",
		full, strings.Join(missing, ", "), told)
}
