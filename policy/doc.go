// Package policy is nrikit's trust model for plugins: an administrator's
// policy file grants each plugin what it may change in the containers it
// sees, where, and which plugins are required. A runtime that embeds
// nrikit checks each plugin's own answer against the plugin's grant
// before merging it; docs/policy.md documents the file format, the
// matching of plugins, the field names and a policy per sample plugin.
//
// # Use
//
//	p, err := policy.Load("/etc/nri/policy.yaml") // or Parse(name, data)
//	g := p.GrantFor("10", "device-injector")      // at registration
//	scope := filter.And(pluginScope, g.WhereFilter())
//	caps := g.Capabilities().Intersect(applied)    // told at Configure
//	if vs := g.CheckAdjustment(pod, ctr, adj); vs != nil {
//		err := policy.Deny("10-device-injector", pod, ctr, vs)
//		// the plugin failed the request: apply its failure policy
//	}
//
// # Semantics
//
// No policy (the nil *Policy, whose grants are nil *Grant) allows every
// plugin everything: a runtime without a policy file behaves as before.
// With a policy, a plugin's grant is the first entry of grants (in the
// file's order) naming it, else the default grant; a policy without a
// default grant lets the plugins it does not name change nothing (they
// still get events and may answer without changes). An empty policy file
// is thus a valid policy under which no plugin may change anything.
//
// A grant allows kinds of change ([capability.Capability], package
// api/capability), each within the value rules of its key. What the
// grant does not allow is a [Violation]; what the runtime does with one is its own business, and nrikit's contract is
// that it is the plugin's failure of the request, under the plugin's
// failure policy, with an error ([DeniedError]) naming the plugin, the
// container, the field, the value and the rule, a log line and a count of
// denied changes by plugin and field. A grant in audit mode (its Action,
// or the policy's, is ActionAudit) refuses nothing: its violations are
// logged and counted as audited, and the changes applied, to roll a
// policy out.
//
// A path in an answer means what it says: mount destinations and
// sources, hook and device paths must be absolute and clean, a mount's
// read-only state is the one its options end with in the order the OCI
// runtime applies them, and a bind source is looked up on the host, as
// the kernel will look it up, and must stay in its granted directory
// (docs/policy.md, "Paths mean what they say").
//
// A Policy and its Grants are immutable and safe for concurrent use. The
// checks do not allocate when they allow everything (the common case),
// but to look bind mount sources up on the host (a system call per name);
// BenchmarkCheckAdjustment measures them.
package policy
