// Package differ is a sample NRI plugin that shows how each container
// changed between what the runtime proposed and what it created: it
// remembers the container as it is proposed in CreateContainer (or the
// resources asked for in UpdateContainer) and logs, field by field, how
// the container the runtime reports in PostCreateContainer (or
// PostUpdateContainer) differs.
//
// Whose changes those are depends on the runtime (see [Runtime]):
//
//   - nrikit's runtime shows each plugin the container as changed by the
//     plugins before it, so the differ reports what the plugins after it
//     (by index) changed: at index 00 it sees every change, and instances
//     at several indices attribute changes to the plugins between them
//     (the timeline of `nri run` attributes every change to its plugin
//     directly);
//   - containerd and CRI-O show every plugin the container as they
//     proposed it, so the differ reports the changes of all plugins
//     together, whatever its index, and cannot tell them apart.
//
// Fields that are absent in one view and empty or zero in the other are
// no change (runtimes send or leave out such fields as they please), nor
// are resources an update leaves alone. Changes the differ recognises as
// the runtime's own doing, rather than a plugin's, are reported
// separately (containerd and CRI-O set the swap limit to the memory
// limit).
package differ

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
	"github.com/nrikit/nrikit/ocispec"
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
	runtime Runtime
	created map[string]*api.Container    // by container ID, from CreateContainer
	updated map[string]map[string]string // by container ID: the resources asked for, flattened
}

// New returns a differ plugin logging to log. report, if not nil, is also
// called with every set of differences, those of the runtime's included
// (Change.Runtime set).
func New(log *slog.Logger, report func(event, container string, changes []Change)) *Plugin {
	return &Plugin{log: log, report: report, created: map[string]*api.Container{}, updated: map[string]map[string]string{}}
}

func ctrName(pod *api.PodSandbox, c *api.Container) string {
	return pod.GetNamespace() + "/" + pod.GetName() + "/" + c.GetName()
}

// Configure notes the runtime, which decides whose changes the differ
// sees, and logs what that means.
func (p *Plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	if _, err := ParseConfig(config); err != nil {
		return 0, err
	}
	rt := RuntimeNamed(runtime)
	p.mu.Lock()
	p.runtime = rt
	p.mu.Unlock()
	p.log.Info("reporting the changes of "+rt.Attribution(), "runtime", runtime+" "+version)
	return 0, nil
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
	rt := p.runtime
	p.mu.Unlock()
	if ok {
		after := ocispec.Fields(c)
		changes := diffFields(ocispec.Fields(before), after)
		rt.markRuntime(changes, after)
		p.emit(rt, "PostCreateContainer", ctrName(pod, c), changes)
	}
	return nil
}

// UpdateContainer remembers the resources asked for, over the
// container's current ones.
func (p *Plugin) UpdateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	want := resourcesOnly(updateBase(c, res))
	p.mu.Lock()
	p.updated[c.GetId()] = want
	p.mu.Unlock()
	return nil, nil
}

// PostUpdateContainer logs how the updated container's resources differ
// from the ones asked for.
func (p *Plugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.mu.Lock()
	before, ok := p.updated[c.GetId()]
	delete(p.updated, c.GetId())
	rt := p.runtime
	p.mu.Unlock()
	if ok {
		after := resourcesOnly(ocispec.Fields(c))
		changes := diffFields(before, after)
		rt.markRuntime(changes, after)
		p.emit(rt, "PostUpdateContainer", ctrName(pod, c), changes)
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

// emit logs the plugins' changes, then those of the runtime.
func (p *Plugin) emit(rt Runtime, event, container string, changes []Change) {
	var byPlugins, byRuntime []Change
	for _, c := range changes {
		if c.Runtime != "" {
			byRuntime = append(byRuntime, c)
		} else {
			byPlugins = append(byPlugins, c)
		}
	}
	if len(byPlugins) == 0 {
		p.log.Info(event+": no changes by plugins", "container", container)
	} else {
		p.log.Info(event+": plugins changed the container", "container", container, "changes", len(byPlugins), "by", rt.Attribution())
		for _, c := range byPlugins {
			p.log.Info("  "+c.String(), "container", container)
		}
	}
	if len(byRuntime) > 0 {
		p.log.Info(event+": the runtime changed the container", "container", container, "changes", len(byRuntime), "runtime", rt.Name)
		for _, c := range byRuntime {
			p.log.Info("  "+c.String(), "container", container)
		}
	}
	if p.report != nil {
		p.report(event, container, changes)
	}
}

// Config is the plugin's configuration: it takes none, so any key is an
// error (ParseConfig).
type Config struct{}

// ParseConfig checks a configuration (the runtime's, or the file of
// -config): this plugin takes none, so anything but an empty document or
// comments is refused, naming the key.
func ParseConfig(config string) (Config, error) {
	var c Config
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid differ configuration: %w", err)
	}
	return c, nil
}
