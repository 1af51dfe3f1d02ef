package core

import (
	"context"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// Capabilities told to the plugin: a nrikit runtime tells, in its
// Configure request, the adjustment fields, update kinds and evictions it
// honours for the plugin (ConfigureRequest.capabilities, docs/protocol.md
// §5.4); an older runtime, or upstream's, tells nothing. The plugin's
// required capabilities go back in the Configure response; the runtime,
// not the stub, refuses a plugin it does not honour them for, so that
// the refusal has one reason, the runtime's.

// toldCapabilities returns the capabilities req tells, and whether it
// tells any (the field is present). Names the stub does not know (a newer
// runtime's) are left out, and returned as unknown: the plugin cannot use
// them.
func toldCapabilities(req *api.ConfigureRequest) (caps capability.Set, told bool, unknown []string) {
	set := req.GetCapabilities()
	if set == nil {
		return capability.Set{}, false, nil
	}
	caps, unknown = capability.ParseSet(set.GetNames())
	return caps, true, unknown
}

// capabilitiesKey is the context key of the told capabilities.
type capabilitiesKey struct{}

// toldValue is what the Configure handler's context carries.
type toldValue struct {
	caps capability.Set
	told bool
}

// noteCapabilities logs the capabilities the runtime told (at debug
// level: the plugin says what it makes of them) and returns ctx carrying
// them for the Configure handler (see ToldCapabilities).
func (p *Plugin) noteCapabilities(ctx context.Context, told toldValue, unknown []string) context.Context {
	if !told.told {
		p.log(LevelDebug, "the runtime tells no capabilities (an older runtime, or upstream's)")
	} else {
		p.log(LevelDebug, "the runtime tells capabilities", "capabilities", told.caps.String(), "unknown", len(unknown))
		if missing := told.caps.Missing(p.cfg.RequiredCapabilities); !missing.Empty() {
			p.log(LevelWarn, "the runtime does not honour capabilities the plugin requires: it will refuse the plugin",
				"missing", missing.String())
		}
	}
	return context.WithValue(ctx, capabilitiesKey{}, told)
}

// ToldCapabilities returns the capabilities the runtime told the plugin,
// from the context of the plugin's Configure handler, and whether the
// runtime told any (false on an older runtime, or upstream's, and
// outside the Configure handler).
func ToldCapabilities(ctx context.Context) (capability.Set, bool) {
	v, ok := ctx.Value(capabilitiesKey{}).(toldValue)
	return v.caps, ok && v.told
}
