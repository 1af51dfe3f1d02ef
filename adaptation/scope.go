package adaptation

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
)

// WithCEL makes the Adaptation evaluate the CEL expressions of scopes
// (docs/scope.md): those plugins declare, those of [PluginPolicy], and
// the where of the policy file's grants (docs/policy.md); pass
// celscope.Compile (package github.com/nrikit/nrikit/filter/celscope).
// Without it a plugin declaring a scope with a CEL expression is refused
// at registration, with the reason, a PluginPolicy scope with one makes
// [New] fail, and a policy file whose where has one is an invalid policy
// file (no plugin may change anything until a valid one is read). CEL is
// an option because its implementation costs a runtime that evaluates no
// CEL expression several megabytes of binary and of resident memory;
// `nri run` and compat/nri pass it.
func WithCEL(compile filter.CELCompiler) Option {
	return func(c *config) error {
		if compile == nil {
			return errors.New("adaptation: WithCEL: nil compiler")
		}
		c.cel = compile
		return nil
	}
}

// filterOptions are the options every scope is compiled with: the CEL
// compiler of WithCEL, or one that refuses every expression naming the
// missing option.
func (c *config) filterOptions(opts ...filter.Option) []filter.Option {
	if c.cel != nil {
		return append(opts, filter.WithCEL(c.cel))
	}
	return append(opts, filter.WithCEL(noCEL))
}

// noCEL is the CEL compiler of an Adaptation without WithCEL.
func noCEL(expr string, _ filter.CELConfig) (filter.Matcher, error) {
	return nil, fmt.Errorf("expression %q: %w: this runtime evaluates no CEL expression (its Adaptation was created without adaptation.WithCEL)",
		expr, filter.ErrNoCEL)
}

// compileScope compiles a plugin's or an administrator's scope, CEL
// expressions included if the Adaptation was given WithCEL.
func (c *config) compileScope(scope *api.PluginScope, opts ...filter.Option) (*filter.Filter, error) {
	return filter.Compile(scope, c.filterOptions(opts...)...)
}

// A plugin's view of the pods and containers (see docs/scope.md): its
// effective scope (the administrator's and its own, see [PluginPolicy]
// and ConfigureResponse.scope) decides, when an object is created or sent
// in Synchronize, whether the object is in the plugin's scope; that
// decision holds for the object's lifetime. An opt-out (opt_out in the
// answer to RunPodSandbox, CreateContainer or Synchronize) withdraws an
// object from the plugin's events until the object is removed. Both are
// remembered per plugin in a tracker, and forgotten when the object is
// removed.

// subject is what an event is about: a pod, or a container and its pod.
type subject struct {
	pod *api.PodSandbox
	ctr *api.Container
}

// about returns the subject of an event about pod and (for container
// events) ctr.
func about(pod *api.PodSandbox, ctr *api.Container) subject { return subject{pod: pod, ctr: ctr} }

func (s subject) podID() string {
	if id := s.pod.GetId(); id != "" {
		return id
	}
	return s.ctr.GetPodSandboxId()
}

func (s subject) ctrID() string { return s.ctr.GetId() }

// verdict is whether an event is delivered to a plugin.
type verdict uint8

const (
	deliver    verdict = iota
	outOfScope         // the object is outside the plugin's scope
	optedOut           // the plugin opted out of the object (or its pod)
)

// podRec is what a tracker remembers about a pod.
type podRec struct {
	seen     bool  // in the plugin's scope (plugins with a scope only)
	optedOut bool  // the plugin opted out of the pod
	ctrs     int32 // container records pointing at the pod
}

// ctrRec is what a tracker remembers about a container.
type ctrRec struct {
	pod      string
	seen     bool
	optedOut bool
}

// tracker is one plugin's scope and opt-out state. A plugin without a
// scope has records only for what it opted out of; a plugin with a scope
// also for the objects in its scope. Records go when the object is
// removed (RemovePodSandbox, RemoveContainer), whether or not the plugin
// subscribed to the removal.
type tracker struct {
	// f is the effective scope; nil if it matches everything.
	f *filter.Filter

	mu   sync.Mutex
	pods map[string]podRec
	ctrs map[string]ctrRec
	nOpt int // records with optedOut set
	// removed holds the objects removed while the plugin synchronized,
	// so that an opt-out in its Synchronize answer does not bring back
	// a record for an object that is gone. Nil once synchronized.
	removed map[string]struct{}

	// Lock-free fast paths, written under mu.
	records atomic.Int64 // len(pods) + len(ctrs)
	opted   atomic.Int64 // nOpt
	syncing atomic.Bool
}

func newTracker(f *filter.Filter) *tracker {
	if f.MatchesAll() {
		f = nil
	}
	t := &tracker{f: f, pods: map[string]podRec{}, ctrs: map[string]ctrRec{}, removed: map[string]struct{}{}}
	t.syncing.Store(true)
	return t
}

// isContainerEvent reports whether e is about a container.
func isContainerEvent(e api.Event) bool { return api.ContainerEvents.IsSet(e) }

// decide says whether an event e about s is delivered to the plugin, and
// keeps the records: a creation decides whether the object is in scope,
// a removal forgets it. It is called for every plugin, subscribed to e or
// not, under the registry lock.
func (t *tracker) decide(e api.Event, s subject) verdict {
	if t.f == nil && t.records.Load() == 0 && !t.syncing.Load() {
		return deliver
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if isContainerEvent(e) {
		return t.decideContainer(e, s)
	}
	return t.decidePod(e, s)
}

func (t *tracker) decidePod(e api.Event, s subject) verdict {
	id := s.podID()
	rec, known := t.pods[id]
	v := deliver
	switch {
	case rec.optedOut:
		v = optedOut
	case t.f == nil:
	case e == api.Event_RUN_POD_SANDBOX && !rec.seen:
		if t.f.MatchPod(s.pod) {
			rec.seen = true
			t.pods[id] = rec
			t.counted()
		} else {
			v = outOfScope
		}
	case !rec.seen:
		v = outOfScope
	}
	if e == api.Event_REMOVE_POD_SANDBOX {
		if known {
			t.dropPod(id, rec)
		}
		t.noteRemoved("pod/" + id)
	}
	return v
}

func (t *tracker) decideContainer(e api.Event, s subject) verdict {
	pid, cid := s.podID(), s.ctrID()
	crec, known := t.ctrs[cid]
	if e == api.Event_CREATE_CONTAINER && t.f != nil && !known && t.f.MatchContainer(s.pod, s.ctr) {
		crec, known = ctrRec{pod: pid, seen: true}, true
		t.addContainer(cid, crec)
	}
	v := deliver
	switch {
	case crec.optedOut || t.pods[pid].optedOut:
		v = optedOut
	case t.f != nil && !crec.seen:
		v = outOfScope
	}
	if e == api.Event_REMOVE_CONTAINER {
		if known {
			t.dropContainer(cid, crec)
		}
		t.noteRemoved("container/" + cid)
	}
	return v
}

// addContainer stores a new container record.
func (t *tracker) addContainer(id string, rec ctrRec) {
	t.ctrs[id] = rec
	p := t.pods[rec.pod]
	p.ctrs++
	t.pods[rec.pod] = p
	if rec.optedOut {
		t.nOpt++
	}
	t.counted()
}

// dropContainer forgets a container, and its pod's record if that only
// counted the container.
func (t *tracker) dropContainer(id string, rec ctrRec) {
	delete(t.ctrs, id)
	if rec.optedOut {
		t.nOpt--
	}
	if p, ok := t.pods[rec.pod]; ok {
		p.ctrs--
		if p == (podRec{}) {
			delete(t.pods, rec.pod)
		} else {
			t.pods[rec.pod] = p
		}
	}
	t.counted()
}

// dropPod forgets a pod and any container records still pointing at it
// (normally none: containers are removed before their pod).
func (t *tracker) dropPod(id string, rec podRec) {
	if rec.ctrs > 0 {
		for cid, c := range t.ctrs {
			if c.pod == id {
				delete(t.ctrs, cid)
				if c.optedOut {
					t.nOpt--
				}
			}
		}
	}
	delete(t.pods, id)
	if rec.optedOut {
		t.nOpt--
	}
	t.counted()
}

// noteRemoved remembers a removal while the plugin synchronizes.
func (t *tracker) noteRemoved(key string) {
	if t.removed != nil {
		t.removed[key] = struct{}{}
	}
}

// counted publishes the sizes for the fast paths.
func (t *tracker) counted() {
	t.records.Store(int64(len(t.pods) + len(t.ctrs)))
	t.opted.Store(int64(t.nOpt))
}

// optOut records that the plugin wants no further events about the pods
// podIDs and the containers ctrs (container ID to pod ID). Objects removed
// while the plugin synchronized are skipped.
func (t *tracker) optOut(podIDs []string, ctrs map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range podIDs {
		if _, gone := t.removed["pod/"+id]; gone {
			continue
		}
		rec := t.pods[id]
		if !rec.optedOut {
			rec.optedOut = true
			t.pods[id] = rec
			t.nOpt++
		}
	}
	for cid, pid := range ctrs {
		if _, gone := t.removed["container/"+cid]; gone {
			continue
		}
		rec, known := t.ctrs[cid]
		switch {
		case !known:
			t.addContainer(cid, ctrRec{pod: pid, optedOut: true})
		case !rec.optedOut:
			rec.optedOut = true
			t.ctrs[cid] = rec
			t.nOpt++
		}
	}
	t.counted()
}

// synchronized ends the synchronization: removals need no more noting.
func (t *tracker) synchronized() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removed = nil
	t.syncing.Store(false)
}

// optedOutOf reports whether the plugin opted out of the pod podID or the
// container ctrID; the worker asks it for events queued before an
// opt-out.
func (t *tracker) optedOutOf(podID, ctrID string) bool {
	if t.opted.Load() == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pods[podID].optedOut || (ctrID != "" && t.ctrs[ctrID].optedOut)
}

// inScope reports whether the container id is in the plugin's scope, so
// that the plugin may update or evict it. Opt-outs do not matter here:
// they are about events, the scope is about authority.
func (t *tracker) inScope(id string) bool {
	if t.f == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ctrs[id].seen
}

// seed records the objects of the plugin's Synchronize snapshot
// that are in its scope and returns them (all of them for a plugin
// without a scope). The caller holds the registry lock.
func (t *tracker) seed(pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.PodSandbox, []*api.Container) {
	if t.f == nil {
		return pods, ctrs
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	byID := make(map[string]*api.PodSandbox, len(pods))
	var inPods []*api.PodSandbox
	for _, p := range pods {
		byID[p.GetId()] = p
		if t.f.MatchPod(p) {
			rec := t.pods[p.GetId()]
			rec.seen = true
			t.pods[p.GetId()] = rec
			inPods = append(inPods, p)
		}
	}
	var inCtrs []*api.Container
	for _, c := range ctrs {
		pod := byID[c.GetPodSandboxId()]
		if _, dup := t.ctrs[c.GetId()]; !dup && t.f.MatchContainer(pod, c) {
			t.addContainer(c.GetId(), ctrRec{pod: c.GetPodSandboxId(), seen: true})
			inCtrs = append(inCtrs, c)
		}
	}
	t.counted()
	return inPods, inCtrs
}

// size returns the number of pod and container records (tests).
func (t *tracker) size() (pods, ctrs int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pods), len(t.ctrs)
}
