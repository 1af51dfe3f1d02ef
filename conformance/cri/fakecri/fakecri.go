// Package fakecri is a CRI runtime in memory with nrikit's runtime library
// for NRI, for the tests of `nri check runtime --cri-socket`
// (conformance/cri): it keeps pods and containers with their OCI specs,
// calls the NRI events where containerd and CRI-O do and applies the
// plugins' answers with the ocispec package. Faults give it the bugs of
// real runtimes that the checks are made to find.
package fakecri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/ocispec"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Faults are bugs of real runtimes the fake runtime can have, so that
// each check of `nri check runtime --cri-socket` is shown to fail on the
// bug it is for.
type Faults struct {
	ReadyWhileRunning   bool // lists a pod READY while its RunPodSandbox is held
	KeepFailedPod       bool // keeps a pod whose RunPodSandbox failed (containerd#13609)
	CreateInStoppedPod  bool // creates containers in stopped pods (containerd#13599)
	EmptyContainerName  bool // sends containers without their name (cri-o#10011)
	ListWhileCreating   bool // lists a container while its CreateContainer is held
	IgnoreEvictions     bool // does not stop evicted containers
	IgnoreUpdateAnswers bool // ignores the updates of plugins' answers
	RunningDuringStop   bool // calls StopPodSandbox before stopping the containers
	CrashOnSysctl       bool // stops serving CRI when a plugin adjusts a sysctl (CRI-O on NRI v0.11.0)
}

// Config says how Start makes the fake runtime.
type Config struct {
	// RequestTimeout is the NRI request timeout (the runtime library's
	// default if zero).
	RequestTimeout time.Duration
	// Images are the images in the runtime's store.
	Images []string
	// Faults are the bugs the runtime has.
	Faults Faults
}

// Runtime is a CRI runtime in memory, with nrikit's runtime library for
// NRI: what `nri check runtime --cri-socket` sees of a runtime on nrikit.
// Containers do not run; hooks do (createRuntime hooks run on the host at
// StartContainer), and a few files of a container's inside are rendered
// from its spec for ExecSync `cat FILE`.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	// NRISocket and CRISocket are where the runtime listens.
	NRISocket, CRISocket string

	nri     *adaptation.Adaptation
	srv     *grpc.Server
	crashed atomic.Bool // CrashOnSysctl happened: CRI answers Unavailable
	faults  Faults
	images  []string

	mu   sync.Mutex
	pods map[string]*fakePod
	ctrs map[string]*fakeCtr
}

type fakePod struct {
	id      string
	cfg     *runtimeapi.PodSandboxConfig
	state   runtimeapi.PodSandboxState
	created bool // RunPodSandbox returned
}

type fakeCtr struct {
	id, podID string
	cfg       *runtimeapi.ContainerConfig
	spec      *rspec.Spec
	state     runtimeapi.ContainerState
	created   bool // CreateContainer returned
	pid       uint32
}

// Start starts the fake runtime in a new directory; t's cleanup stops it.
func Start(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	dir, err := os.MkdirTemp("", "nri-cri-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &Runtime{NRISocket: filepath.Join(dir, "nri.sock"), CRISocket: filepath.Join(dir, "cri.sock"), faults: cfg.Faults,
		images: cfg.Images, pods: map[string]*fakePod{}, ctrs: map[string]*fakeCtr{}}
	opts := []adaptation.Option{adaptation.WithSocketPath(r.NRISocket), adaptation.WithPluginDir(filepath.Join(dir, "plugins")),
		adaptation.WithConfigDir(filepath.Join(dir, "conf")), adaptation.WithLogger(slog.New(slog.DiscardHandler))}
	if cfg.RequestTimeout > 0 {
		opts = append(opts, adaptation.WithRequestTimeout(cfg.RequestTimeout))
	}
	r.nri, err = adaptation.New("fakecri", "v0", r.list, r.update, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.nri.Start(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", r.CRISocket)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r.crashed.Load() {
			return nil, status.Error(codes.Unavailable, "connection reset: the runtime crashed")
		}
		return h(ctx, req)
	}))
	runtimeapi.RegisterRuntimeServiceServer(r.srv, r)
	runtimeapi.RegisterImageServiceServer(r.srv, r)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.srv.Serve(l) }()
	t.Cleanup(func() {
		r.srv.Stop()
		<-done
		_ = r.nri.Stop(context.Background())
		cancel()
	})
	return r
}

// Objects returns how many pods and containers the runtime has.
func (r *Runtime) Objects() (pods, containers int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pods), len(r.ctrs)
}

// hasImage reports whether the image is in the runtime's store.
func (r *Runtime) hasImage(image string) bool { return slices.Contains(r.images, image) }

// missingLabels returns the keys of want that got lacks or has with
// another value.
func missingLabels(got, want map[string]string) []string {
	var bad []string
	for k, v := range want {
		if got[k] != v {
			bad = append(bad, k)
		}
	}
	return bad
}

// resourcesOf returns the spec's Linux resources, never nil.
func resourcesOf(s *rspec.Spec) *rspec.LinuxResources {
	if s.Linux == nil || s.Linux.Resources == nil {
		return &rspec.LinuxResources{}
	}
	return s.Linux.Resources
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// list is the adaptation's ListFunc: every pod and container whose
// creation event was called.
func (r *Runtime) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pods []*api.PodSandbox
	for _, p := range r.pods {
		pods = append(pods, r.nriPod(p))
	}
	var ctrs []*api.Container
	for _, c := range r.ctrs {
		ctrs = append(ctrs, r.nriCtr(c))
	}
	return pods, ctrs, nil
}

// update is the adaptation's UpdateFunc.
func (r *Runtime) update(_ context.Context, updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applyLocked(updates, evictions), nil
}

// applyLocked applies updates and evictions and returns the updates it
// could not apply.
func (r *Runtime) applyLocked(updates []*api.ContainerUpdate, evictions []*api.ContainerEviction) []*api.ContainerUpdate {
	var failed []*api.ContainerUpdate
	if r.faults.IgnoreUpdateAnswers {
		updates = nil
	}
	for _, u := range updates {
		c, ok := r.ctrs[u.GetContainerId()]
		if !ok || ocispec.ApplyUpdate(c.spec, u) != nil {
			failed = append(failed, u)
		}
	}
	if !r.faults.IgnoreEvictions {
		for _, e := range evictions {
			if c, ok := r.ctrs[e.GetContainerId()]; ok {
				c.state = runtimeapi.ContainerState_CONTAINER_EXITED
			}
		}
	}
	return failed
}

func (r *Runtime) nriPod(p *fakePod) *api.PodSandbox {
	md := p.cfg.GetMetadata()
	return &api.PodSandbox{Id: p.id, Name: md.GetName(), Uid: md.GetUid(), Namespace: md.GetNamespace(),
		Labels: maps.Clone(p.cfg.GetLabels()), Annotations: maps.Clone(p.cfg.GetAnnotations()),
		Linux: &api.LinuxPodSandbox{CgroupsPath: "/fake/" + p.id}}
}

func (r *Runtime) nriCtr(c *fakeCtr) *api.Container {
	name := c.cfg.GetMetadata().GetName()
	if r.faults.EmptyContainerName {
		name = ""
	}
	state := map[runtimeapi.ContainerState]api.ContainerState{
		runtimeapi.ContainerState_CONTAINER_CREATED: api.ContainerState_CONTAINER_CREATED,
		runtimeapi.ContainerState_CONTAINER_RUNNING: api.ContainerState_CONTAINER_RUNNING,
		runtimeapi.ContainerState_CONTAINER_EXITED:  api.ContainerState_CONTAINER_STOPPED,
	}[c.state]
	ctr := ocispec.ToContainer(c.spec, ocispec.ContainerMeta{ID: c.id, PodSandboxID: c.podID, Name: name, State: state,
		Labels: c.cfg.GetLabels(), Pid: c.pid, Image: &api.Image{Name: c.cfg.GetImage().GetImage()}})
	ctr.Annotations = maps.Clone(c.cfg.GetAnnotations())
	return ctr
}

func (r *Runtime) pod(id string) (*fakePod, error) {
	p, ok := r.pods[id]
	if !ok || (!p.created && !r.faults.ReadyWhileRunning) {
		return nil, status.Errorf(codes.NotFound, "pod %q not found", id)
	}
	return p, nil
}

func (r *Runtime) ctr(id string) (*fakeCtr, error) {
	c, ok := r.ctrs[id]
	if !ok || (!c.created && !r.faults.ListWhileCreating) {
		return nil, status.Errorf(codes.NotFound, "container %q not found", id)
	}
	return c, nil
}

// Version names the fake runtime.
func (r *Runtime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fakecri", RuntimeVersion: "v0", RuntimeApiVersion: "v1"}, nil
}

// ImageStatus knows the images of the Config.
func (r *Runtime) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	if !r.hasImage(req.GetImage().GetImage()) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:fake", RepoTags: []string{req.GetImage().GetImage()}}}, nil
}

// RunPodSandbox adds the pod, then calls NRI.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	p := &fakePod{id: newID(), cfg: req.GetConfig(), state: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	if r.faults.ReadyWhileRunning {
		p.state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	r.mu.Lock()
	r.pods[p.id] = p
	nriPod := r.nriPod(p)
	r.mu.Unlock()
	if err := r.nri.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: nriPod}); err != nil {
		r.mu.Lock()
		if r.faults.KeepFailedPod {
			p.created, p.state = true, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		} else {
			delete(r.pods, p.id)
		}
		r.mu.Unlock()
		if !r.faults.KeepFailedPod {
			_ = r.nri.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: nriPod})
		}
		return nil, fmt.Errorf("NRI RunPodSandbox failed: %w", err)
	}
	r.mu.Lock()
	p.created, p.state = true, runtimeapi.PodSandboxState_SANDBOX_READY
	r.mu.Unlock()
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: p.id}, nil
}

// StopPodSandbox stops the pod's containers, then tells NRI.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	r.mu.Lock()
	p, err := r.pod(req.GetPodSandboxId())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	var running []*fakeCtr
	for _, c := range r.ctrs {
		if c.podID == p.id && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
			running = append(running, c)
		}
	}
	p.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	nriPod := r.nriPod(p)
	r.mu.Unlock()
	if r.faults.RunningDuringStop {
		_ = r.nri.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: nriPod})
	}
	for _, c := range running {
		if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.id}); err != nil {
			return nil, err
		}
	}
	if !r.faults.RunningDuringStop {
		_ = r.nri.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: nriPod})
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes the pod's containers and the pod.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	r.mu.Lock()
	p, ok := r.pods[req.GetPodSandboxId()]
	var ids []string
	for _, c := range r.ctrs {
		if ok && c.podID == p.id {
			ids = append(ids, c.id)
		}
	}
	r.mu.Unlock()
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	for _, id := range ids {
		if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	delete(r.pods, p.id)
	nriPod := r.nriPod(p)
	r.mu.Unlock()
	_ = r.nri.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: nriPod})
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus reports a pod whose RunPodSandbox returned.
func (r *Runtime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, err := r.pod(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: p.id, Metadata: p.cfg.GetMetadata(), State: p.state,
		Labels: p.cfg.GetLabels(), Annotations: p.cfg.GetAnnotations()}}, nil
}

// ListPodSandbox lists the pods whose RunPodSandbox returned.
func (r *Runtime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var items []*runtimeapi.PodSandbox
	for _, p := range r.pods {
		if _, err := r.pod(p.id); err != nil || len(missingLabels(p.cfg.GetLabels(), req.GetFilter().GetLabelSelector())) > 0 {
			continue
		}
		items = append(items, &runtimeapi.PodSandbox{Id: p.id, Metadata: p.cfg.GetMetadata(), State: p.state, Labels: p.cfg.GetLabels()})
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}
