package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/ocispec"
	"github.com/nrikit/nrikit/policy"
)

// CheckGrant is the check of the plugin's answers against its grant
// under PluginConfig.Policy.
const CheckGrant = "answers within its grant"

// grant returns the plugin's grant under the policy (nil without one).
func (c *pluginCheck) grant() *policy.Grant {
	if c.cfg.Policy == nil {
		return nil
	}
	return c.cfg.Policy.GrantFor(c.inst.GetIndex(), c.inst.GetName())
}

// grantWhere returns the where of the plugin's grant, which a runtime
// ANDs with the plugin's scope; nil for everywhere.
func (c *pluginCheck) grantWhere() *filter.Filter {
	if w := c.grant().WhereFilter(); w != nil && !w.MatchesAll() {
		return w
	}
	return nil
}

// judgeGrant records the changes of the plugin's answer resp to ev that
// its grant does not allow, as the runtime refuses them.
func (c *pluginCheck) judgeGrant(ev api.Event, resp proto.Message) {
	g := c.grant()
	if g == nil {
		return
	}
	for _, v := range g.CheckAnswer(c.world.newPod, c.world.newCtr, resp) {
		c.found.refused = append(c.found.refused, ev.Name()+": "+v.String())
	}
}

// reportGrant records CheckGrant, if there is a policy: the grant, and
// the changes it does not allow.
func (c *pluginCheck) reportGrant() {
	if c.cfg.Policy == nil {
		return
	}
	what := fmt.Sprintf("%s's grant is %s", c.full, c.grant())
	if notes := c.cfg.Policy.NamedWithoutExtension(c.inst.GetIndex(), c.inst.GetName()); len(notes) > 0 {
		what += fmt.Sprintf(" (%s, not %s: a plugin is named after its file, extension included)", strings.Join(notes, ", "), c.inst.GetName())
	}
	if len(c.found.refused) == 0 {
		c.rec.pass(CheckGrant, 0, "%s, which allows every answer", what)
		return
	}
	c.rec.fail(CheckGrant, 0, "%s; the runtime would refuse the answer to %s", what, strings.Join(c.found.refused, "; "))
}

// maxAdjusted is the number of fields adjusted names in full.
const maxAdjusted = 6

// adjusted names the fields an adjustment sets or removes, as the nri
// command's timeline names them ("env[FOO]", "env[BAR] (removed)",
// "linux.resources.memory.limit"), the first few of them and how many
// more.
func adjusted(adj *api.ContainerAdjustment) string {
	paths := slices.Collect(maps.Keys(ocispec.Fields(adj)))
	for i, p := range paths {
		if j := strings.Index(p, "[-"); j >= 0 {
			paths[i] = p[:j+1] + p[j+2:] + " (removed)"
		}
	}
	slices.Sort(paths)
	switch {
	case len(paths) == 0:
		return "nothing"
	case len(paths) > maxAdjusted:
		return fmt.Sprintf("%s and %d more", strings.Join(paths[:maxAdjusted], ", "), len(paths)-maxAdjusted)
	}
	return strings.Join(paths, ", ")
}
