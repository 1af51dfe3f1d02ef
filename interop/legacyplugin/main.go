// Command legacyplugin is an NRI plugin built on upstream NRI v0.11.0 (and,
// with go.v0.10.0.mod, on v0.10.0), as the resource-policy plugins of
// containers/nri-plugins v0.14.0 are: its stub has no RPC of its own for
// RunPodSandbox, StopPodSandbox, RemovePodSandbox, PostUpdatePodSandbox,
// PostCreateContainer, StartContainer, PostStartContainer,
// PostUpdateContainer and RemoveContainer, answers those UNIMPLEMENTED and
// serves them through StateChange. The interop tests check it with
// `nri check plugin`, launched and external (-socket), as nri-plugins'
// memtierd, resctrl-mon and topology-aware were checked, which the module
// proxy does not serve.
//
// It handles every event and, like topology-aware, keeps the pods it was
// told about (in Synchronize or RunPodSandbox) and needs a container's pod
// to be one of them: where topology-aware panics in its cache, it fails
// the event. Every event must carry its pod, and a container event its
// container. It answers CreateContainer with an environment variable.
//
// It is a module of its own (go.mod: NRI v0.11.0; go.v0.10.0.mod: v0.10.0,
// built with -modfile=go.v0.10.0.mod) because the interop module requires
// NRI v0.12.5.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// plugin is the legacy plugin's state: the pods it knows, by ID.
type plugin struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (p *plugin) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	fmt.Fprintf(os.Stderr, "configured by %s %s\n", runtime, version)
	return 0, nil
}

func (p *plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	for _, pod := range pods {
		if err := p.addPod(pod); err != nil {
			return nil, fmt.Errorf("Synchronize: %w", err)
		}
	}
	for _, ctr := range ctrs {
		if err := p.knownPod("Synchronize", ctr); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (p *plugin) Shutdown(context.Context) {}

func (p *plugin) addPod(pod *api.PodSandbox) error {
	if pod.GetId() == "" {
		return errors.New("a pod without an ID")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[pod.GetId()] = true
	return nil
}

// knownPod fails an event about ctr unless its pod was seen.
func (p *plugin) knownPod(event string, ctr *api.Container) error {
	if ctr.GetId() == "" {
		return fmt.Errorf("%s without its container", event)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pods[ctr.GetPodSandboxId()] {
		return fmt.Errorf("%s of container %s: its pod %s was never seen (in Synchronize or RunPodSandbox)", event, ctr.GetId(), ctr.GetPodSandboxId())
	}
	return nil
}

// podEvent checks an event about pod.
func podEvent(event string, pod *api.PodSandbox) error {
	if pod.GetId() == "" {
		return fmt.Errorf("%s without its pod", event)
	}
	return nil
}

// containerEvent checks an event about pod and ctr.
func (p *plugin) containerEvent(event string, pod *api.PodSandbox, ctr *api.Container) error {
	if err := podEvent(event, pod); err != nil {
		return err
	}
	return p.knownPod(event, ctr)
}

func (p *plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	if err := podEvent("RunPodSandbox", pod); err != nil {
		return err
	}
	return p.addPod(pod)
}

func (p *plugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, _ *api.LinuxResources) error {
	return podEvent("UpdatePodSandbox", pod)
}

func (p *plugin) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return podEvent("PostUpdatePodSandbox", pod)
}

func (p *plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	return podEvent("StopPodSandbox", pod)
}

func (p *plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	if err := podEvent("RemovePodSandbox", pod); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, pod.GetId())
	return nil
}

func (p *plugin) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if err := p.containerEvent("CreateContainer", pod, ctr); err != nil {
		return nil, nil, err
	}
	adjust := &api.ContainerAdjustment{}
	adjust.AddEnv("LEGACY_PLUGIN", "seen "+pod.GetNamespace()+"/"+pod.GetName())
	return adjust, nil, nil
}

func (p *plugin) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.containerEvent("PostCreateContainer", pod, ctr)
}

func (p *plugin) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.containerEvent("StartContainer", pod, ctr)
}

func (p *plugin) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.containerEvent("PostStartContainer", pod, ctr)
}

func (p *plugin) UpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container, _ *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, p.containerEvent("UpdateContainer", pod, ctr)
}

func (p *plugin) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.containerEvent("PostUpdateContainer", pod, ctr)
}

func (p *plugin) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	return nil, p.containerEvent("StopContainer", pod, ctr)
}

func (p *plugin) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	return p.containerEvent("RemoveContainer", pod, ctr)
}

func (p *plugin) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	return p.containerEvent("ValidateContainerAdjustment", req.GetPod(), req.GetContainer())
}

func main() {
	socket := flag.String("socket", "", "connect to this runtime socket as an external plugin (default: launched, fd 3)")
	name := flag.String("name", "legacy", "plugin name, as an external plugin")
	idx := flag.String("idx", "40", "plugin index, as an external plugin")
	flag.Parse()
	var opts []stub.Option
	if *socket != "" {
		opts = append(opts, stub.WithSocketPath(*socket), stub.WithPluginName(*name), stub.WithPluginIdx(*idx))
	}
	s, err := stub.New(&plugin{pods: map[string]bool{}}, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "legacyplugin:", err)
		os.Exit(1)
	}
	// Run ends when the runtime shuts the plugin down or goes away: the
	// normal end of a plugin.
	err = s.Run(context.Background())
	fmt.Fprintln(os.Stderr, "legacyplugin: stub ended:", err)
}
