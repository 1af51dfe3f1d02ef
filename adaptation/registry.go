package adaptation

import (
	"slices"
	"time"

	"github.com/nrikit/nrikit/adaptation/internal/queue"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/grpc/codes"
)

// The registry is a.plugins (sorted, synchronizing and active plugins) and
// a.admitting (plugins between RegisterPlugin and activation), guarded by
// a.mu. Event dispatch takes a.mu once, at its start, to pick its plugins
// and reserve their queue slots; activation takes it once to insert the
// plugin and take its snapshot. That one lock is what orders events
// against the snapshots of synchronizing plugins.

// reservation is a dispatch's picked plugins and their slots.
type reservation struct {
	plugins []*plugin
	slots   []*queue.Slot
	// catchUp[i] is set if plugins[i] was synchronizing.
	catchUp []bool
	// observers are the observe-only plugins of the event, not among
	// plugins: their slots are never lent, and are filled once the
	// event's request is final and never waited for (observeonly.go).
	observers []observer
}

// reserve picks the plugins subscribed to e for which the event's
// subject s is in scope and not opted out of, and reserves a slot in
// each of their queues (lent to the dispatcher where the worker is idle,
// if lend is set: see queue.Queue.Push); the scope records of every
// plugin are kept up to date on the way (see tracker.decide). hooks run
// under the same lock. It returns ErrStopped after Stop.
func (a *Adaptation) reserve(e api.Event, s subject, hooks reserveHooks, lend bool) (*reservation, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil, ErrStopped
	}
	if hooks.check != nil {
		if err := hooks.check(); err != nil {
			return nil, err
		}
	}
	a.noteObject(e, s)
	r := &reservation{}
	podID, ctrID := s.podID(), s.ctrID()
	for _, p := range a.plugins {
		v := p.track.decide(e, s)
		if !p.subscribed(e) {
			continue
		}
		if v == deliver && !p.inWhere(eventKind(isContainerEvent(e)), s) {
			v = outOfScope // the plugin's where changed since it registered
		}
		if v != deliver {
			p.skipped(e, v)
			if hooks.skipped != nil && !p.observeOnly {
				hooks.skipped(p)
			}
			continue
		}
		catch := p.state == StateSynchronizing
		sl := queue.NewSlot(e, podID, ctrID, catch)
		if p.observeOnly {
			if p.q.PushQuiet(sl) {
				r.observers = append(r.observers, observer{p, sl})
			}
			continue
		}
		if !p.q.Push(sl, lend && !catch) {
			continue
		}
		r.plugins = append(r.plugins, p)
		r.slots = append(r.slots, sl)
		r.catchUp = append(r.catchUp, catch)
	}
	return r, nil
}

// release gives up the slots from index i on (those not filled yet),
// and the observers' (the event did not happen).
func (r *reservation) release(from int) {
	r.dropObservers()
	for i, s := range r.slots[from:] {
		if s.Lent() {
			r.plugins[from+i].q.GiveBack(s)
			continue
		}
		s.Fill(nil)
	}
}

// missingRequiredLocked returns an error naming the first required
// plugin that is not registered, unless the container s is outside the
// plugin's scope: the one it last registered with, else the
// administrator's. The caller holds a.mu.
func (a *Adaptation) missingRequiredLocked(s subject) error {
	for full, ov := range a.cfg.overrides {
		if !ov.Required {
			continue
		}
		if slices.ContainsFunc(a.plugins, func(p *plugin) bool { return p.full == full }) {
			continue
		}
		scope, known := a.lastScopes[full]
		if !known {
			scope = a.cfg.adminScopes[full]
		}
		if !scope.MatchContainer(s.pod, s.ctr) {
			continue
		}
		return &RequiredPluginError{Plugin: full}
	}
	return nil
}

// admit reserves p's name while it is configured. An external plugin
// registering under a reserved name (reserve.go) is refused, and so is a
// second registration under the name of a builtin or pre-installed
// plugin; an external plugin may replace an external plugin of the same
// name only with the same identity (handover, see activate and
// identity.Identity.Same), and is refused, naming both identities,
// otherwise; an external plugin whose identity the policy's grants and
// required entries of its name do not take is refused (see
// policy.Policy.GrantForIdentity). An external plugin registering under the name
// of another external one that is still between RegisterPlugin and
// activation (a plugin reconnecting at once, before the runtime has
// finished with its previous connection) waits for that one to be
// activated or dropped, at most the registration timeout; other
// registrations under the name of a registering plugin are refused.
func (a *Adaptation) admit(p *plugin) *RegistrationError {
	t := time.NewTimer(a.cfg.limits.RegistrationTimeout)
	defer t.Stop()
	for {
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			return registrationError(p.full, codes.Unavailable, ErrStopped, "runtime is shutting down")
		}
		if owner, ok := a.reserved[p.full]; ok && p.kind == KindExternal {
			a.mu.Unlock()
			return registrationError(p.full, codes.AlreadyExists, nil, "plugin name %q is reserved for %s", p.full, owner)
		}
		busy := a.admitting[p.full]
		if busy == nil {
			break
		}
		a.mu.Unlock()
		if busy.kind != KindExternal || p.kind != KindExternal {
			return registrationError(p.full, codes.AlreadyExists, nil, "plugin %q is already registering", p.full)
		}
		select {
		case <-busy.unadmitted:
		case <-t.C:
			return registrationError(p.full, codes.AlreadyExists, nil,
				"plugin %q is already registering on another connection", p.full)
		case <-a.ctx.Done():
			return registrationError(p.full, codes.Unavailable, ErrStopped, "runtime is shutting down")
		}
	}
	defer a.mu.Unlock()
	var unbound error // the policy's refusal of p's identity
	if p.kind == KindExternal {
		_, unbound = a.pol.Load().GrantForIdentity(p.idx, p.name, p.id)
	}
	if old := a.findLocked(p.full); old != nil {
		if old.kind != KindExternal || p.kind != KindExternal {
			return registrationError(p.full, codes.AlreadyExists, nil,
				"plugin %q is already registered (%s); only external plugins can be replaced", p.full, old.kind)
		}
		// The same identity replaces it, and so does one the policy
		// binds the name to when the connected one no longer meets it
		// (a reload bound the name).
		if !p.id.Same(old.id) && (unbound != nil || old.unbound() == nil) {
			return registrationError(p.full, codes.PermissionDenied, nil,
				"plugin %q is connected as %s; a connection as %s may not replace it: an external plugin is replaced only by the same identity",
				p.full, old.id, p.id)
		}
	}
	if unbound != nil {
		return registrationError(p.full, codes.PermissionDenied, unbound, "%v", unbound)
	}
	a.admitting[p.full] = p
	return nil
}

// leaveAdmittingLocked takes p out of a.admitting, if it is there, and
// wakes the registrations waiting for its name. The caller holds a.mu.
func (a *Adaptation) leaveAdmittingLocked(p *plugin) {
	if a.admitting[p.full] == p {
		delete(a.admitting, p.full)
	}
	p.unadmitOnce.Do(func() { close(p.unadmitted) })
}

// unadmit drops a plugin whose registration failed, and its metrics.
func (a *Adaptation) unadmit(p *plugin) {
	a.mu.Lock()
	a.leaveAdmittingLocked(p)
	a.mu.Unlock()
	a.dropMetrics(p)
}

func (a *Adaptation) findLocked(full string) *plugin {
	for _, q := range a.plugins {
		if q.full == full {
			return q
		}
	}
	return nil
}

// forget removes p from the registry.
func (a *Adaptation) forget(p *plugin) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p.state = StateClosed
	a.leaveAdmittingLocked(p)
	if i := slices.Index(a.plugins, p); i >= 0 {
		a.plugins = slices.Delete(a.plugins, i, i+1)
	}
	a.metrics.setPlugins(len(a.plugins))
}
