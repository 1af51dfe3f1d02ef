package adaptation

import (
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/policy"
)

// grantState is a plugin's grant under the Adaptation's current policy,
// replaced whole when the policy is reloaded, so that a request sees one
// grant and its where together.
type grantState struct {
	grant *policy.Grant
	// where is grant.WhereFilter(); nil if it matches everything.
	where *filter.Filter
	// recheck is set if where differs from the one the plugin's scope
	// records were made under (a reload changed it): each event's
	// subject is then matched against where too (see inWhere), and so
	// are the containers the plugin updates or evicts, found in the
	// where index (whereindex.go).
	recheck bool
	// unbound is the policy's refusal of the plugin's identity (a
	// *policy.IdentityError): a reload bound its name to identities it
	// does not have. Its grant is then one of nothing, and it counts as
	// no required plugin.
	unbound error
}

// currentGrant returns the plugin's grant under the current policy: nil
// for no policy, which allows everything.
func (p *plugin) currentGrant() *policy.Grant {
	if gs := p.grant.Load(); gs != nil {
		return gs.grant
	}
	return nil
}

// resolveGrant sets the plugin's grant under pol (nil: no policy), for
// its identity, and logs the policy's refusal of that identity when it
// is new. The caller holds a.mu, which orders it against configure and
// events.
func (p *plugin) resolveGrant(pol *policy.Policy) {
	gs := p.grantUnder(pol)
	if gs != nil && gs.unbound != nil && p.unbound() == nil {
		p.a.log.Warn("the policy binds the plugin's name to another identity: it may change nothing and counts as no required plugin",
			"plugin", p.full, "error", gs.unbound)
	}
	p.grant.Store(gs)
}

// grantUnder returns the plugin's grant under pol, for its identity: nil
// for no policy. It has no effect (a reload asks it of every plugin
// before applying pol). The caller holds a.mu (trackedWhere).
func (p *plugin) grantUnder(pol *policy.Policy) *grantState {
	if pol == nil {
		return nil
	}
	g, unbound := pol.GrantForIdentity(p.idx, p.name, p.id)
	where := g.WhereFilter()
	if where.MatchesAll() {
		where = nil
	}
	return &grantState{grant: g, where: where, recheck: where.String() != p.trackedWhere, unbound: unbound}
}

// unbound returns the policy's refusal of the plugin's identity under the
// current policy, or nil (see grantState.unbound).
func (p *plugin) unbound() error {
	if gs := p.grant.Load(); gs != nil {
		return gs.unbound
	}
	return nil
}

// rechecks reports whether gs's where is not the one the plugin's scope
// records were made under and confines it: its subjects and targets are
// then checked against where (inWhere, whereTarget).
func (gs *grantState) rechecks() bool { return gs != nil && gs.recheck && gs.where != nil }

// inWhere reports whether the subject s of an event is within the
// plugin's current where, when a reload changed it since the plugin's
// scope records were made (they hold the where of the plugin's
// registration otherwise). A subject without its pod is left to the
// records.
func (p *plugin) inWhere(e eventKind, s subject) bool {
	gs := p.grant.Load()
	if !gs.rechecks() || s.pod == nil {
		return true
	}
	if e == containerEvent {
		return s.ctr == nil || gs.where.MatchContainer(s.pod, s.ctr)
	}
	return gs.where.MatchPod(s.pod)
}

// eventKind says whether an event is about a pod or a container.
type eventKind bool

const (
	podEvent       eventKind = false
	containerEvent eventKind = true
)
