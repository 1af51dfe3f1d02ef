// Package logger is a sample NRI plugin that logs the events it receives:
// every event by default, or the ones it is configured for. It changes
// nothing, so it can be added to any runtime to watch what the runtime
// tells its plugins.
//
// Configuration (the runtime's Configure config, YAML), or the -events
// flag:
//
//	events: [RunPodSandbox, CreateContainer, StopContainer]   # or "all", "pod", "container"
package logger

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/yamldoc"
)

// Name is the plugin's default name.
const Name = "logger"

// Plugin logs events. Its handlers are safe for concurrent use.
type Plugin struct {
	log    *slog.Logger
	events api.EventMask
}

// New returns a logger plugin writing to log, subscribed to events (0 for
// all; the runtime's configuration may choose others).
func New(log *slog.Logger, events api.EventMask) *Plugin {
	return &Plugin{log: log, events: events}
}

// Config is the plugin's configuration.
type Config struct {
	// Events to log; empty keeps the plugin's default.
	Events EventList `yaml:"events"`
}

// EventList is a list of event names, or one comma-separated string, as
// accepted by api.ParseEventMask.
type EventList struct {
	// Mask is the decoded set.
	Mask api.EventMask
}

// UnmarshalYAML accepts a string ("all", "CreateContainer,StopContainer")
// or a list of event names.
func (l *EventList) UnmarshalYAML(n *yaml.Node) error {
	var spec string
	switch n.Kind {
	case yaml.ScalarNode:
		spec = n.Value
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		spec = strings.Join(names, ",")
	default:
		return fmt.Errorf("line %d: events: want a list of event names", n.Line)
	}
	m, err := api.ParseEventMask(spec)
	if err != nil {
		return fmt.Errorf("line %d: events: %w", n.Line, err)
	}
	l.Mask = m
	return nil
}

// ParseConfig decodes a configuration; unknown keys are errors.
func ParseConfig(config string) (Config, error) {
	var c Config
	if strings.TrimSpace(config) == "" {
		return c, nil
	}
	if err := yamldoc.Decode([]byte(config), &c); err != nil {
		return Config{}, fmt.Errorf("invalid logger configuration: %w", err)
	}
	return c, nil
}

// Configure applies the runtime's configuration and subscribes to the
// configured events.
func (p *Plugin) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return 0, err
	}
	events := p.events
	if c.Events.Mask != 0 {
		events = c.Events.Mask
	}
	if events == api.AllEvents {
		// "all" is every event the logger has a handler for (the stub's
		// 0), not every event of the protocol: the stub refuses a
		// subscription to an event without a handler, and the protocol
		// may have events the logger does not log yet.
		events = 0
	}
	p.log.Info("Configure", "runtime", runtime, "version", version, "events", eventsString(events))
	return events, nil
}

func eventsString(m api.EventMask) string {
	if m == 0 {
		return "all"
	}
	return m.String()
}

// Synchronize logs the existing pods and containers.
func (p *Plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.log.Info("Synchronize", "pods", len(pods), "containers", len(ctrs))
	for _, pod := range pods {
		p.log.Debug("Synchronize: pod", "pod", podName(pod))
	}
	for _, c := range ctrs {
		p.log.Debug("Synchronize: container", "container", c.GetName(), "pod-id", c.GetPodSandboxId())
	}
	return nil, nil
}

// Shutdown logs the runtime's shutdown.
func (p *Plugin) Shutdown(context.Context) { p.log.Info("Shutdown") }

func podName(pod *api.PodSandbox) string { return pod.GetNamespace() + "/" + pod.GetName() }

func (p *Plugin) pod(event string, pod *api.PodSandbox, attrs ...any) {
	p.log.Info(event, append([]any{"pod", podName(pod)}, attrs...)...)
}

func (p *Plugin) ctr(event string, pod *api.PodSandbox, c *api.Container, attrs ...any) {
	p.log.Info(event, append([]any{"pod", podName(pod), "container", c.GetName(), "state", c.GetState().String()}, attrs...)...)
}

// RunPodSandbox logs the event.
func (p *Plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.pod("RunPodSandbox", pod, "uid", pod.GetUid(), "labels", pod.GetLabels())
	return nil
}

// UpdatePodSandbox logs the event.
func (p *Plugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, overhead, res *api.LinuxResources) error {
	p.pod("UpdatePodSandbox", pod, "resources", resourcesString(res))
	return nil
}

// PostUpdatePodSandbox logs the event.
func (p *Plugin) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.pod("PostUpdatePodSandbox", pod)
	return nil
}

// StopPodSandbox logs the event.
func (p *Plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.pod("StopPodSandbox", pod)
	return nil
}

// RemovePodSandbox logs the event.
func (p *Plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.pod("RemovePodSandbox", pod)
	return nil
}

// CreateContainer logs the event and changes nothing.
func (p *Plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.ctr("CreateContainer", pod, c, "image", c.GetImage().GetName(), "args", c.GetArgs())
	return nil, nil, nil
}

// PostCreateContainer logs the event.
func (p *Plugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.ctr("PostCreateContainer", pod, c)
	return nil
}

// StartContainer logs the event.
func (p *Plugin) StartContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.ctr("StartContainer", pod, c)
	return nil
}

// PostStartContainer logs the event.
func (p *Plugin) PostStartContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.ctr("PostStartContainer", pod, c)
	return nil
}

// UpdateContainer logs the event and changes nothing.
func (p *Plugin) UpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	p.ctr("UpdateContainer", pod, c, "resources", resourcesString(res))
	return nil, nil
}

// PostUpdateContainer logs the event.
func (p *Plugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.ctr("PostUpdateContainer", pod, c)
	return nil
}

// StopContainer logs the event and changes nothing.
func (p *Plugin) StopContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) ([]*api.ContainerUpdate, error) {
	p.ctr("StopContainer", pod, c)
	return nil, nil
}

// RemoveContainer logs the event.
func (p *Plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, c *api.Container) error {
	p.ctr("RemoveContainer", pod, c)
	return nil
}

// ValidateContainerAdjustment logs the combined adjustment and accepts it.
func (p *Plugin) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	var consulted []string
	for _, pl := range req.GetPlugins() {
		consulted = append(consulted, api.FullPluginName(pl.GetIndex(), pl.GetName()))
	}
	p.ctr("ValidateContainerAdjustment", req.GetPod(), req.GetContainer(), "plugins", consulted)
	return nil
}

// resourcesString summarizes CPU and memory resources.
func resourcesString(r *api.LinuxResources) string {
	if r == nil {
		return "none"
	}
	var parts []string
	if v := r.GetCpu().GetShares(); v != nil {
		parts = append(parts, fmt.Sprintf("cpu.shares=%d", v.GetValue()))
	}
	if v := r.GetCpu().GetQuota(); v != nil {
		parts = append(parts, fmt.Sprintf("cpu.quota=%d", v.GetValue()))
	}
	if s := r.GetCpu().GetCpus(); s != "" {
		parts = append(parts, "cpuset.cpus="+s)
	}
	if v := r.GetMemory().GetLimit(); v != nil {
		parts = append(parts, fmt.Sprintf("memory.limit=%d", v.GetValue()))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
