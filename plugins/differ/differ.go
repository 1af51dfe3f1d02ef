// Package differ is a sample NRI plugin that shows what the runtime's
// plugins changed in each container: it remembers the container as it is
// proposed in CreateContainer (or its resources in UpdateContainer) and
// logs, field by field, how the container the runtime reports in
// PostCreateContainer (or PostUpdateContainer) differs.
//
// A nrikit runtime shows each plugin the container as changed by the
// plugins before it, so the differ reports what the plugins after it (by
// index) changed: at index 00 it sees every change. Instances at several
// indices attribute changes to the plugins between them; the timeline of
// `nri run` attributes every change to its plugin directly.
package differ

import (
	"context"
	"log/slog"
	"sync"

	"github.com/nrikit/nrikit/api"
)

// Name is the plugin's default name.
const Name = "differ"

// Plugin records and compares containers. It is safe for concurrent use.
type Plugin struct {
	log *slog.Logger
	// report, if set, receives every difference found (for tests and
	// embedders).
	report func(event, container string, changes []Change)

	mu      sync.Mutex
	created map[string]*api.Container // by container ID, from CreateContainer
	updated map[string]*api.Container // by container ID, with the requested resources
}

// New returns a differ plugin logging to log. report, if not nil, is also
// called with every set of differences.
func New(log *slog.Logger, report func(event, container string, changes []Change)) *Plugin {
	return &Plugin{log: log, report: report, created: map[string]*api.Container{}, updated: map[string]*api.Container{}}
}

func ctrName(pod *api.PodSandbox, c *api.Container) string {
	return pod.GetNamespace() + "/" + pod.GetName() + "/" + c.GetName()
}

// CreateContainer remembers the proposed container.
func (p *Plugin) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.mu.Lock()
	p.created[c.GetId()] = api.Clone(c)
	p.mu.Unlock()
	return nil, nil, nil
}

// PostCreateContainer logs how the created container differs.
func (p *Plugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.mu.Lock()
	before, ok := p.created[c.GetId()]
	delete(p.created, c.GetId())
	p.mu.Unlock()
	if ok {
		p.emit("PostCreateContainer", ctrName(pod, c), Diff(before, c))
	}
	return nil
}

// UpdateContainer remembers the container with the requested resources.
func (p *Plugin) UpdateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	want := api.Clone(c)
	if want.Linux == nil {
		want.Linux = &api.LinuxContainer{}
	}
	want.Linux.Resources = api.Clone(res)
	p.mu.Lock()
	p.updated[c.GetId()] = want
	p.mu.Unlock()
	return nil, nil
}

// PostUpdateContainer logs how the updated container's resources differ
// from the requested ones.
func (p *Plugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.mu.Lock()
	before, ok := p.updated[c.GetId()]
	delete(p.updated, c.GetId())
	p.mu.Unlock()
	if ok {
		p.emit("PostUpdateContainer", ctrName(pod, c), resourcesOnly(Diff(before, c)))
	}
	return nil
}

// RemoveContainer forgets the container.
func (p *Plugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) error {
	p.mu.Lock()
	delete(p.created, c.GetId())
	delete(p.updated, c.GetId())
	p.mu.Unlock()
	return nil
}

func (p *Plugin) emit(event, container string, changes []Change) {
	if len(changes) == 0 {
		p.log.Info(event+": no changes by plugins", "container", container)
	} else {
		p.log.Info(event+": plugins changed the container", "container", container, "changes", len(changes))
		for _, c := range changes {
			p.log.Info("  "+c.String(), "container", container)
		}
	}
	if p.report != nil {
		p.report(event, container, changes)
	}
}
