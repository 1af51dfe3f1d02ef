package merge

import "github.com/nrikit/nrikit/api"

// evictions collects eviction requests, one per container (the first
// reason given wins). Requests without a container ID are ignored.
type evictions struct {
	list []*api.ContainerEviction
	seen map[string]bool
}

func (e *evictions) apply(tx *txn, in []*api.ContainerEviction) {
	for _, ev := range in {
		if ev.GetContainerId() == "" {
			continue
		}
		tx.then(func() {
			if e.seen[ev.ContainerId] {
				return
			}
			if e.seen == nil {
				e.seen = make(map[string]bool)
			}
			e.seen[ev.ContainerId] = true
			e.list = append(e.list, ev)
		})
	}
}
