package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nrikit/nrikit/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the checker puts on its pods and containers: the run's nonce
// (the final sweep removes what carries it) and the check's ID (its
// plugins answer only about those).
const (
	runLabel  = "nri-check.nrikit.dev/run"
	caseLabel = "nri-check.nrikit.dev/check"
)

// cleanupTimeout bounds the removal of what one check made.
const cleanupTimeout = 60 * time.Second

// run is one check being run: its context, its plugins and what it made
// on the runtime, which it removes when it ends, whatever the verdict.
type run struct {
	*env
	check *Check
	ctx   context.Context
	seq   sequence

	mu      sync.Mutex
	pods    []string        // created, in order
	ctrs    []string        // created, in order
	podIDs  map[string]bool // the check's pods, also those only NRI told of
	plugins []*plugin
	n       int    // names handed out
	noted   string // what an adjustment set, for the check to look for
}

func newRun(ctx context.Context, e *env, c *Check) *run {
	return &run{env: e, check: c, ctx: ctx, podIDs: map[string]bool{}}
}

// owns reports whether a pod or container an event is about is the
// check's own, and learns the IDs of its pods.
func (r *run) owns(pod *api.PodSandbox, ctr *api.Container) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := pod.GetLabels(); l[runLabel] == r.nonce && l[caseLabel] == r.check.ID {
		r.podIDs[pod.GetId()] = true
		return true
	}
	if id := pod.GetId(); id != "" {
		return r.podIDs[id]
	}
	return ctr != nil && r.podIDs[ctr.GetPodSandboxId()]
}

// setNote and note keep a value a handler chose for the check to look
// for later.
func (r *run) setNote(v string) { r.mu.Lock(); r.noted = v; r.mu.Unlock() }
func (r *run) note() string     { r.mu.Lock(); defer r.mu.Unlock(); return r.noted }

// name returns a new name for an object of the check.
func (r *run) name(kind string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return fmt.Sprintf("nri-check-%s-%s-%s%d", r.check.ID, r.nonce, kind, r.n)
}

// plugin connects and registers a plugin of the check; the run closes it
// at the end.
func (r *run) plugin(spec pluginSpec) (*plugin, error) {
	if spec.Idx == "" {
		spec.Idx = "50"
	}
	if spec.Name == "" {
		spec.Name = "p"
	}
	full := api.FullPluginName(spec.Idx, fmt.Sprintf("nri-check-%s-%s-%s", r.check.ID, spec.Name, r.nonce))
	r.syncGate.Lock()
	defer r.syncGate.Unlock()
	p, err := r.dialPlugin(spec, full)
	if err != nil {
		return nil, err
	}
	if _, err := p.register(r.ctx, registerTimeout); err != nil {
		return nil, err
	}
	return p, nil
}

// dialPlugin connects a plugin of the check without registering it.
func (r *run) dialPlugin(spec pluginSpec, full string) (*plugin, error) {
	p, err := dialPlugin(r.ctx, r.cfg.NRISocket, full, spec, r.owns, &r.seq, registerTimeout)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.plugins = append(r.plugins, p)
	r.mu.Unlock()
	return p, nil
}

// registerTimeout bounds a check plugin's registration up to its
// Synchronize.
const registerTimeout = 20 * time.Second

// podConfig returns the configuration of a new pod of the check.
func (r *run) podConfig() *runtimeapi.PodSandboxConfig {
	name := r.name("pod")
	// The runtime writes the containers' logs there; some expect it.
	_ = os.MkdirAll(filepath.Join(r.logDir, name), 0o755)
	network := runtimeapi.NamespaceMode_NODE
	if r.cfg.PodNetwork {
		network = runtimeapi.NamespaceMode_POD
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name + "-uid", Namespace: "nri-check-" + r.nonce},
		Labels:       map[string]string{runLabel: r.nonce, caseLabel: r.check.ID, "app": "nri-check"},
		Annotations:  map[string]string{"nri-check.nrikit.dev/pod-annotation": r.check.ID},
		LogDirectory: filepath.Join(r.logDir, name),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: network, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		}},
	}
}

// containerConfig returns the configuration of a new container of the
// check in a pod configured as pod. It does not set the kubelet's label
// io.kubernetes.container.name: a CRI client need not.
func (r *run) containerConfig(pod *runtimeapi.PodSandboxConfig) *runtimeapi.ContainerConfig {
	name := r.name("ctr")
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: r.cfg.Image, UserSpecifiedImage: r.cfg.Image},
		Command:     slices.Clone(r.cfg.Command),
		Labels:      map[string]string{caseLabel: r.check.ID},
		Annotations: map[string]string{"nri-check.nrikit.dev/container-annotation": r.check.ID},
		Envs:        []*runtimeapi.KeyValue{{Key: "NRI_CHECK", Value: []byte(r.check.ID)}},
		LogPath:     name + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: pod.GetLinux().GetSecurityContext().GetNamespaceOptions(),
		}},
	}
}

// runPod runs a pod configured as cfg, and remembers it for the cleanup.
func (r *run) runPod(ctx context.Context, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.cri.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox %s: %s", cfg.GetMetadata().GetName(), rpcMessage(err))
	}
	r.adopt(resp.GetPodSandboxId(), "")
	return resp.GetPodSandboxId(), nil
}

// newPod runs a new pod of the check.
func (r *run) newPod() (string, *runtimeapi.PodSandboxConfig, error) {
	cfg := r.podConfig()
	id, err := r.runPod(r.ctx, cfg)
	return id, cfg, err
}

// createContainer creates a container in the pod podID (configured as
// pod) and remembers it for the cleanup.
func (r *run) createContainer(ctx context.Context, podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (string, error) {
	resp, err := r.cri.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if err != nil {
		return "", fmt.Errorf("CreateContainer %s: %s", cfg.GetMetadata().GetName(), rpcMessage(err))
	}
	r.adopt("", resp.GetContainerId())
	return resp.GetContainerId(), nil
}

// startContainer starts a created container.
func (r *run) startContainer(id string) error {
	if _, err := r.cri.rt.StartContainer(r.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("StartContainer %s: %s", short(id), rpcMessage(err))
	}
	return nil
}

// newContainer creates and starts a container configured by cfg (a new
// default one if nil) in the pod podID.
func (r *run) newContainer(podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (string, error) {
	if cfg == nil {
		cfg = r.containerConfig(pod)
	}
	id, err := r.createContainer(r.ctx, podID, pod, cfg)
	if err != nil {
		return "", err
	}
	return id, r.startContainer(id)
}

// podWithContainer runs a new pod of the check with a started default
// container.
func (r *run) podWithContainer() (podID string, pod *runtimeapi.PodSandboxConfig, ctrID string, err error) {
	if podID, pod, err = r.newPod(); err != nil {
		return "", nil, "", err
	}
	ctrID, err = r.newContainer(podID, pod, nil)
	return podID, pod, ctrID, err
}

// adopt remembers a pod or container the check made, for the cleanup.
func (r *run) adopt(podID, ctrID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if podID != "" && !slices.Contains(r.pods, podID) {
		r.pods = append(r.pods, podID)
		r.podIDs[podID] = true
	}
	if ctrID != "" && !slices.Contains(r.ctrs, ctrID) {
		r.ctrs = append(r.ctrs, ctrID)
	}
}

// stopPod and removePod are the CRI calls.
func (r *run) stopPod(ctx context.Context, id string) error {
	if _, err := r.cri.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("StopPodSandbox %s: %s", short(id), rpcMessage(err))
	}
	return nil
}

func (r *run) removePod(ctx context.Context, id string) error {
	if _, err := r.cri.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %s", short(id), rpcMessage(err))
	}
	return nil
}

func (r *run) stopContainer(ctx context.Context, id string) error {
	if _, err := r.cri.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("StopContainer %s: %s", short(id), rpcMessage(err))
	}
	return nil
}

// stopCounted stops a container whose StopContainer event the check
// counts: no plugin registers meanwhile (env.syncGate says why; a plugin
// takes the gate before it connects, as the runtime's registration
// timeout runs from the connection).
func (r *run) stopCounted(ctx context.Context, id string) error {
	r.syncGate.RLock()
	defer r.syncGate.RUnlock()
	return r.stopContainer(ctx, id)
}

func (r *run) removeContainer(ctx context.Context, id string) error {
	if _, err := r.cri.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("RemoveContainer %s: %s", short(id), rpcMessage(err))
	}
	return nil
}

// cleanup closes the check's plugins, removes its containers and pods
// (also those it only learned of, and any pod carrying its labels), and
// returns what it could not remove.
func (r *run) cleanup() error {
	r.mu.Lock()
	plugins := r.plugins
	r.mu.Unlock()
	for _, p := range plugins {
		p.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var errs []error
	r.mu.Lock()
	ctrs := slices.Clone(r.ctrs)
	pods := slices.Clone(r.pods)
	r.mu.Unlock()
	for _, id := range slices.Backward(ctrs) {
		if err := r.removeContainer(ctx, id); !gone(err) {
			errs = append(errs, err)
		}
	}
	left, err := r.cri.listPods(ctx, map[string]string{runLabel: r.nonce, caseLabel: r.check.ID})
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range left {
		if !slices.Contains(pods, p.GetId()) {
			pods = append(pods, p.GetId())
		}
	}
	for _, id := range slices.Backward(pods) {
		errs = append(errs, r.dropPod(ctx, id))
	}
	return errors.Join(errs...)
}

// dropPod stops and removes a pod; a pod the runtime no longer knows is
// gone.
func (r *run) dropPod(ctx context.Context, id string) error {
	if err := r.stopPod(ctx, id); !gone(err) {
		return err
	}
	if err := r.removePod(ctx, id); !gone(err) {
		return err
	}
	return nil
}

// gone reports whether a CRI call's error is nil or says the object is
// not there (any more).
func gone(err error) bool {
	return err == nil || strings.Contains(strings.ToLower(err.Error()), "not found")
}
