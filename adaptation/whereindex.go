package adaptation

import (
	"fmt"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
)

// A reload that changes a plugin's where (docs/policy.md, "Where the file
// lives") applies at once: the plugin's events are matched against the
// new where (inWhere), and so are the containers it updates or evicts,
// in its answers to events and in UpdateContainers. Its scope records
// were made under the where of its registration and hold no pod or
// container to match a new where against, so while some plugin's where
// is not its records' (grantState.rechecks), the Adaptation keeps an
// index of the runtime's pods and containers: filled from the runtime's
// list when the reload makes it needed, in the same critical section
// that makes the new grants visible, and kept up to date by every event.

// whereIndex is the runtime's pods and containers by ID (see above).
type whereIndex struct {
	mu sync.Mutex
	// ready is set once the index holds the runtime's list; until then
	// it only notes events.
	ready bool
	pods  map[string]*api.PodSandbox
	ctrs  map[string]*api.Container
	// gone holds the objects removed before the list was taken in
	// ("pod/ID", "container/ID"), so that a list taken before their
	// removal was noted does not bring them back. Nil once ready.
	gone map[string]struct{}
	// unneeded is set by the policy watcher when no plugin needed the
	// index at its last look (guarded by a.reloadMu): it is dropped
	// at the next look that finds it still unneeded, so that a check
	// that began under the where before a reload still finds it.
	unneeded bool
}

// newWhereIndex returns an index that notes events until it is filled.
func newWhereIndex() *whereIndex {
	return &whereIndex{pods: map[string]*api.PodSandbox{}, ctrs: map[string]*api.Container{}, gone: map[string]struct{}{}}
}

// note keeps the index up to date with event e about s: creations add
// their object, removals drop it; other events change nothing here.
func (ix *whereIndex) note(e api.Event, s subject) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch e {
	case api.Event_RUN_POD_SANDBOX:
		if s.pod != nil {
			ix.pods[s.podID()] = s.pod
		}
	case api.Event_CREATE_CONTAINER:
		if s.ctr != nil {
			ix.ctrs[s.ctrID()] = s.ctr
		}
		if _, known := ix.pods[s.podID()]; !known && s.pod != nil {
			ix.pods[s.podID()] = s.pod
		}
	case api.Event_REMOVE_POD_SANDBOX:
		delete(ix.pods, s.podID())
		ix.noteGone("pod/" + s.podID())
	case api.Event_REMOVE_CONTAINER:
		delete(ix.ctrs, s.ctrID())
		ix.noteGone("container/" + s.ctrID())
	}
}

// noteGone remembers a removal until the list is taken in.
func (ix *whereIndex) noteGone(key string) {
	if ix.gone != nil {
		ix.gone[key] = struct{}{}
	}
}

// fill takes in the runtime's list: its objects, except those removed
// since (and keeping what events noted since).
func (ix *whereIndex) fill(pods []*api.PodSandbox, ctrs []*api.Container) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, pod := range pods {
		if _, gone := ix.gone["pod/"+pod.GetId()]; gone {
			continue
		}
		if _, known := ix.pods[pod.GetId()]; !known {
			ix.pods[pod.GetId()] = pod
		}
	}
	for _, c := range ctrs {
		if _, gone := ix.gone["container/"+c.GetId()]; gone {
			continue
		}
		if _, known := ix.ctrs[c.GetId()]; !known {
			ix.ctrs[c.GetId()] = c
		}
	}
	ix.gone = nil
	ix.ready = true
}

// isReady reports whether the index holds the runtime's list.
func (ix *whereIndex) isReady() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.ready
}

// lookup returns container id and its pod, nils if the runtime does not
// list it (it does not exist: updating or evicting it does nothing), or a
// *WhereUncheckedError if the index is not ready (nil: none).
func (ix *whereIndex) lookup(plugin, action, id string) (*api.PodSandbox, *api.Container, error) {
	if ix == nil {
		return nil, nil, &WhereUncheckedError{Plugin: plugin, Action: action, Container: id}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.ready {
		return nil, nil, &WhereUncheckedError{Plugin: plugin, Action: action, Container: id}
	}
	c := ix.ctrs[id]
	if c == nil {
		return nil, nil, nil
	}
	return ix.pods[c.GetPodSandboxId()], c, nil
}

// WhereUncheckedError refuses a plugin's update or eviction of a
// container that cannot be checked against the plugin's where, changed by
// a policy reload, because the runtime's containers could not be listed
// since. It is the Err of a [PluginError] of kind [FailureDenied], or the
// reason of an UpdateContainers refusal.
type WhereUncheckedError struct {
	// Plugin is the plugin's full name (IDX-NAME).
	Plugin string
	// Action is "update" or "evict".
	Action string
	// Container is the ID of the container.
	Container string
}

// Error names the plugin, what it asked for and why it is refused.
func (e *WhereUncheckedError) Error() string {
	return fmt.Sprintf("cannot %s container %q: the where of plugin %q changed with a policy reload, and the runtime's containers could not be listed since",
		e.Action, e.Container, e.Plugin)
}

// noteObject keeps the where index, if there is one, up to date with
// event e about s. The caller holds a.mu (reserve), which orders it
// against the taking of the runtime's list (buildWhereIndex).
func (a *Adaptation) noteObject(e api.Event, s subject) {
	if ix := a.objects.Load(); ix != nil {
		ix.note(e, s)
	}
}

// readyWhereIndex returns the where index if it holds the runtime's
// list, else nil.
func (a *Adaptation) readyWhereIndex() *whereIndex {
	if ix := a.objects.Load(); ix != nil && ix.isReady() {
		return ix
	}
	return nil
}

// needsWhereIndexLocked reports whether a plugin, under the grant grant
// returns for it, is confined to a where its scope records were not made
// under. The caller holds a.mu.
func (a *Adaptation) needsWhereIndexLocked(grant func(*plugin) *grantState) bool {
	for _, p := range a.plugins {
		if grant(p).rechecks() {
			return true
		}
	}
	for _, p := range a.admitting {
		if grant(p).rechecks() {
			return true
		}
	}
	return false
}

// buildWhereIndex makes a new where index, which notes events at once,
// fills it with the runtime's list (snapshot: the ListFunc under a.mu,
// or the SyncFunc under the runtime's lock, then a.mu) and, in the same
// critical section, calls apply if it is not nil. It returns the index,
// ready, or the failure to list (then the index is dropped and apply
// was not called). The caller holds a.reloadMu.
func (a *Adaptation) buildWhereIndex(apply func()) (*whereIndex, error) {
	ix := newWhereIndex()
	a.objects.Store(ix)
	err := a.snapshot("the where of plugins changed by a policy reload", a.cfg.limits.RegistrationTimeout, func(pods []*api.PodSandbox, ctrs []*api.Container) error {
		ix.fill(pods, ctrs)
		if apply != nil {
			apply()
		}
		return nil
	})
	if ix.isReady() {
		// A SyncFunc that failed after handing its snapshot over still
		// handed over one taken under its lock.
		return ix, nil
	}
	a.objects.CompareAndSwap(ix, nil)
	return nil, err
}

// applyPolicy makes p the policy in force and resolves every plugin's
// grant under it, under a.mu: an event sees every plugin under one
// policy, and a plugin being configured resolves its grant under p. If
// p confines a plugin to a where its scope records were not made under,
// the where index is filled first, from the runtime's list, and p
// applied in the same critical section; if the list cannot be taken, p
// is applied all the same, and the updates and evictions that need the
// index are refused (WhereUncheckedError) until it can be (the policy
// watcher and UpdateContainers try again). The caller holds a.reloadMu.
func (a *Adaptation) applyPolicy(p *policy.Policy) {
	a.mu.Lock()
	if !a.needsWhereIndexLocked(func(q *plugin) *grantState { return q.grantUnder(p) }) || a.readyWhereIndex() != nil {
		a.applyPolicyLocked(p)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	applied := false
	_, err := a.buildWhereIndex(func() {
		a.applyPolicyLocked(p)
		applied = true
	})
	if !applied {
		a.mu.Lock()
		a.applyPolicyLocked(p)
		a.mu.Unlock()
	}
	if err != nil {
		a.log.Warn("cannot list the runtime's containers for a where changed by the policy reload: the plugins' updates and evictions that need it are refused until it can",
			"error", err)
	}
}

// applyPolicyLocked is applyPolicy's critical section.
func (a *Adaptation) applyPolicyLocked(p *policy.Policy) {
	a.pol.Store(p)
	for _, q := range a.plugins {
		q.resolveGrant(p)
	}
	for _, q := range a.admitting {
		q.resolveGrant(p)
	}
}

// keepWhereIndex is the policy watcher's look at the where index: one
// that no plugin needed at two looks in a row is dropped; one that is
// needed but missing (the runtime's list could not be taken) is built.
// The caller holds a.reloadMu.
func (a *Adaptation) keepWhereIndex() {
	a.mu.Lock()
	need := a.needsWhereIndexLocked(func(q *plugin) *grantState { return q.grant.Load() })
	a.mu.Unlock()
	ix := a.objects.Load()
	switch {
	case ix != nil && !need && ix.unneeded:
		a.objects.CompareAndSwap(ix, nil)
	case ix != nil && !need:
		ix.unneeded = true
	case need && a.readyWhereIndex() == nil:
		if _, err := a.buildWhereIndex(nil); err != nil {
			a.log.Warn("cannot list the runtime's containers for a where changed by a policy reload", "error", err)
		}
	case ix != nil:
		ix.unneeded = false
	}
}

// readyIndex returns the where index for an update or eviction, when
// UpdateContainers needs it: built now if it is missing (see
// applyPolicy).
func (a *Adaptation) readyIndex() (*whereIndex, error) {
	if ix := a.readyWhereIndex(); ix != nil {
		return ix, nil
	}
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	if ix := a.readyWhereIndex(); ix != nil {
		return ix, nil
	}
	return a.buildWhereIndex(nil)
}
