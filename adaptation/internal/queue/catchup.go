package queue

import "github.com/nrikit/nrikit/api"

// CatchUp filters the events reserved for a plugin while it synchronized
// (slots with [Slot.CatchUp] set), so that it sees every pod and
// container exactly once: an object in its snapshot is not created
// again, and an object it never saw is not removed. The plugin's worker
// owns it: it is not safe for concurrent use.
type CatchUp struct {
	pods, ctrs map[string]struct{}
}

// NewCatchUp returns the filter for a plugin that was sent pods and ctrs
// in its Synchronize.
func NewCatchUp(pods []*api.PodSandbox, ctrs []*api.Container) *CatchUp {
	c := &CatchUp{pods: make(map[string]struct{}, len(pods)), ctrs: make(map[string]struct{}, len(ctrs))}
	for _, p := range pods {
		c.pods[p.GetId()] = struct{}{}
	}
	for _, ctr := range ctrs {
		c.ctrs[ctr.GetId()] = struct{}{}
	}
	return c
}

// Admit reports whether the event of s is delivered, and records the
// objects it creates or removes: RunPodSandbox and CreateContainer are
// delivered once per object, and not for an object of the snapshot;
// RemovePodSandbox and RemoveContainer only for an object the plugin
// knows, once. Other events are delivered.
func (c *CatchUp) Admit(s *Slot) bool {
	switch s.event {
	case api.Event_RUN_POD_SANDBOX:
		return add(c.pods, s.podID)
	case api.Event_CREATE_CONTAINER:
		return add(c.ctrs, s.ctrID)
	case api.Event_REMOVE_POD_SANDBOX:
		return remove(c.pods, s.podID)
	case api.Event_REMOVE_CONTAINER:
		return remove(c.ctrs, s.ctrID)
	}
	return true
}

// add adds id to set; it reports false if id was there.
func add(set map[string]struct{}, id string) bool {
	if _, ok := set[id]; ok {
		return false
	}
	set[id] = struct{}{}
	return true
}

// remove removes id from set; it reports false if id was not there.
func remove(set map[string]struct{}, id string) bool {
	if _, ok := set[id]; !ok {
		return false
	}
	delete(set, id)
	return true
}
