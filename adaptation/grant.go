package adaptation

import "github.com/nrikit/nrikit/policy"

// currentGrant returns the administrator's grant for the plugin under the
// policy in force, or nil when there is no policy: a nil grant allows
// everything. (A placeholder: the policy's enforcement provides the real
// one.)
func (p *plugin) currentGrant() *policy.Grant { return nil }
