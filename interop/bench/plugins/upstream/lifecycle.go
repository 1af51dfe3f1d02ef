package main

import (
	"context"

	"github.com/containerd/nri/pkg/api"
)

// Configure subscribes to what the plugin handles: CreateContainer and
// PostStartContainer, and with lifecycle=1 the node's day benchmark's
// lifecycle events (upstream subscribes a plugin without Configure to
// every event it has a handler for).
func (p *plugin) Configure(context.Context, string, string, string) (api.EventMask, error) {
	var m api.EventMask
	m.Set(api.Event_CREATE_CONTAINER, api.Event_POST_START_CONTAINER)
	if p.cfg.Lifecycle {
		m.Set(api.Event_RUN_POD_SANDBOX, api.Event_STOP_POD_SANDBOX, api.Event_REMOVE_POD_SANDBOX,
			api.Event_START_CONTAINER, api.Event_UPDATE_CONTAINER, api.Event_STOP_CONTAINER, api.Event_REMOVE_CONTAINER)
	}
	return m, nil
}

// The lifecycle handlers do nothing: the benchmark measures the cost of
// delivering the events.

func (p *plugin) RunPodSandbox(context.Context, *api.PodSandbox) error    { return nil }
func (p *plugin) StopPodSandbox(context.Context, *api.PodSandbox) error   { return nil }
func (p *plugin) RemovePodSandbox(context.Context, *api.PodSandbox) error { return nil }

func (p *plugin) StartContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}

func (p *plugin) UpdateContainer(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (p *plugin) StopContainer(context.Context, *api.PodSandbox, *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (p *plugin) RemoveContainer(context.Context, *api.PodSandbox, *api.Container) error {
	return nil
}
