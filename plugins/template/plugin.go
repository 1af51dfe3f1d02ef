// Command template is a minimal NRI plugin to copy when writing a new one.
//
// It injects an environment variable and an annotation into every
// container being created, and logs the pod and container events it
// receives. See README.md for how to build, install and adapt it.
//
// The same plugin builds as a process (main.go, with the stub) and as a
// WebAssembly plugin module (main_wasip1.go, with stub/wasmguest):
// plugin.go, the handlers, builds for both.
package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// What the plugin injects. A real plugin would usually take these from its
// configuration (see Configure below).
const (
	injectedEnvName    = "NRI_TEMPLATE"
	injectedEnvValue   = "injected-by-nri-template"
	injectedAnnotation = "template.nrikit.io/seen"
)

// plugin is the plugin itself. The stub (and, in the WASM build,
// stub/wasmguest) finds out which events it handles by looking at which
// interfaces of package stub/handler (handler.CreateContainerInterface,
// handler.RunPodInterface, ...) it implements, and subscribes it to
// exactly those. To handle another event, add its method; to stop
// handling one, delete the method. Nothing else needs to change.
//
// This file builds for both the process and the WASM plugin, so it uses
// packages api and api/capability only: package stub does not build for wasip1
// (toldCapabilities, in main.go and main_wasip1.go, is the one thing each
// build provides).
//
// The stub may call handlers concurrently (the runtime can have several
// requests in flight), so any state shared between handlers must be
// protected. This plugin has none besides its logger, which is safe for
// concurrent use. A WASM plugin is called one request at a time.
type plugin struct {
	log *slog.Logger
}

// Configure is called once per connection, before any event. config is the
// plugin's configuration from the runtime (often empty). Returning 0 keeps
// the default subscription (every implemented event the runtime supports);
// returning an error makes the registration fail with that message.
//
// ctx carries the capabilities the runtime told the plugin: the
// adjustment fields, update kinds and evictions it will honour for it
// (what it applies, within the plugin's grant). A plugin that cannot work
// without some declares them with stub.WithRequiredCapabilities (or
// wasmguest.WithRequiredCapabilities) instead, and the runtime refuses it
// with the reason.
func (p *plugin) Configure(ctx context.Context, config, runtime, version string) (api.EventMask, error) {
	p.log.Info("configured", "runtime", runtime, "version", version, "config", config)
	if caps, ok := toldCapabilities(ctx); ok {
		p.log.Info("runtime told capabilities", "capabilities", capabilityList(caps))
	} else {
		p.log.Info("runtime told no capabilities (an older runtime, or upstream's)")
	}
	return 0, nil
}

// capabilityList returns the names of caps separated by commas, "none"
// for the empty set.
func capabilityList(caps capability.Set) string {
	if caps.Empty() {
		return "none"
	}
	return strings.Join(caps.Names(), ",")
}

// Synchronize hands the plugin every pod and container that exists when it
// connects (again after a reconnection). A plugin with state rebuilds it
// here; it may also return updates for existing containers.
func (p *plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	p.log.Info("synchronized", "pods", len(pods), "containers", len(ctrs))
	return nil, nil
}

// Shutdown is called when the runtime shuts down; the stub stops after it
// returns.
func (p *plugin) Shutdown(context.Context) {
	p.log.Info("runtime is shutting down")
}

// RunPodSandbox is called when a pod is started. A plugin may
// return wasmguest.ErrNotInterestedInPod (the same error as
// stub.ErrNotInterestedInPod, so both builds honour it) to get no further
// events about the pod from a nrikit runtime.
func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log.Info("pod started", "pod", podName(pod))
	return nil
}

// StopPodSandbox is called when a pod is stopped.
func (p *plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.log.Info("pod stopped", "pod", podName(pod))
	return nil
}

// CreateContainer is called while a container is being created: the place
// to adjust it. The adjustment is merged with those of other plugins; two
// plugins setting the same thing is a conflict that fails the creation.
// Returning an error also fails the creation.
func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.log.Info("container being created", "pod", podName(pod), "container", ctr.GetName())
	adjust := &api.ContainerAdjustment{
		Env:         []*api.KeyValue{{Key: injectedEnvName, Value: injectedEnvValue}},
		Annotations: map[string]string{injectedAnnotation: "true"},
	}
	// The second result could update other, existing containers.
	return adjust, nil, nil
}

// StartContainer is called when a container is being started.
func (p *plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.log.Info("container starting", "pod", podName(pod), "container", ctr.GetName())
	return nil
}

// RemoveContainer is called after a container was removed.
func (p *plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	p.log.Info("container removed", "pod", podName(pod), "container", ctr.GetName())
	return nil
}

func podName(pod *api.PodSandbox) string {
	return pod.GetNamespace() + "/" + pod.GetName()
}
