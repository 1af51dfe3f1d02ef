package stub

import (
	"sync"

	"github.com/nrikit/nrikit/api"
)

// syncCollector gathers the parts of a Synchronize request that the
// runtime split to keep messages small: every part but the last has
// more=true. Parts arrive one after another (the runtime waits for each
// answer), but the collector is safe for concurrent use.
type syncCollector struct {
	// gc is applied from the first part of a split request on and
	// restored when the last part arrives (nil for builtins); see
	// WithSyncGCPercent.
	gc *syncGC

	mu   sync.Mutex
	pods []*api.PodSandbox
	ctrs []*api.Container
}

// add adds a part. For the last part it returns everything collected and
// resets the collector.
func (c *syncCollector) add(req *api.SynchronizeRequest) (pods []*api.PodSandbox, ctrs []*api.Container, last bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods = append(c.pods, req.GetPods()...)
	c.ctrs = append(c.ctrs, req.GetContainers()...)
	if req.GetMore() {
		// A snapshot the runtime had to split is large: relax the GC
		// for the parts still to come.
		c.gc.begin()
		return nil, nil, false
	}
	c.gc.end() // every part is decoded
	pods, ctrs = c.pods, c.ctrs
	c.pods, c.ctrs = nil, nil
	return pods, ctrs, true
}
