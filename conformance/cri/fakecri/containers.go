package fakecri

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/ocispec"
	rspec "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer builds the container's spec, adds it, calls NRI and
// applies the answer.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	r.mu.Lock()
	p, err := r.pod(req.GetPodSandboxId())
	if err == nil && p.state != runtimeapi.PodSandboxState_SANDBOX_READY && !r.faults.CreateInStoppedPod {
		err = status.Errorf(codes.FailedPrecondition, "pod %q is not ready", p.id)
	}
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if !r.hasImage(cfg.GetImage().GetImage()) {
		r.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "image %q not found", cfg.GetImage().GetImage())
	}
	spec := &rspec.Spec{Version: rspec.Version, Annotations: map[string]string{},
		Process: &rspec.Process{Args: slices.Concat(cfg.GetCommand(), cfg.GetArgs()), Env: []string{"PATH=/bin"}},
		Linux:   &rspec.Linux{CgroupsPath: "/fake/ctr", Resources: &rspec.LinuxResources{}}}
	if len(spec.Process.Args) == 0 {
		spec.Process.Args = []string{"/pause"}
	}
	for _, kv := range cfg.GetEnvs() {
		spec.Process.Env = append(spec.Process.Env, kv.GetKey()+"="+string(kv.GetValue()))
	}
	c := &fakeCtr{id: newID(), podID: p.id, cfg: cfg, spec: spec, state: runtimeapi.ContainerState_CONTAINER_CREATED}
	spec.Linux.CgroupsPath = "/fake/" + c.id
	r.ctrs[c.id] = c
	nreq := &api.CreateContainerRequest{Pod: r.nriPod(p), Container: r.nriCtr(c)}
	r.mu.Unlock()
	resp, err := r.nri.CreateContainer(ctx, nreq)
	if err == nil && r.faults.CrashOnSysctl && len(resp.GetAdjust().GetLinux().GetSysctl()) > 0 {
		r.crashed.Store(true)
		return nil, status.Error(codes.Unavailable, "connection reset: the runtime crashed")
	}
	if err == nil {
		r.mu.Lock()
		err = ocispec.Apply(spec, resp.GetAdjust())
		r.applyLocked(resp.GetUpdate(), resp.GetEvict())
		r.mu.Unlock()
	}
	if err != nil {
		r.mu.Lock()
		delete(r.ctrs, c.id)
		r.mu.Unlock()
		_ = r.nri.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: nreq.Pod, Container: nreq.Container})
		return nil, fmt.Errorf("NRI CreateContainer failed: %w", err)
	}
	r.mu.Lock()
	c.created = true
	post := &api.PostCreateContainerRequest{Pod: nreq.Pod, Container: r.nriCtr(c)}
	r.mu.Unlock()
	_ = r.nri.PostCreateContainer(ctx, post)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

// event returns the pod and container of an NRI request about c.
func (r *Runtime) event(c *fakeCtr) (*api.PodSandbox, *api.Container) {
	var pod *api.PodSandbox
	if p, ok := r.pods[c.podID]; ok {
		pod = r.nriPod(p)
	}
	return pod, r.nriCtr(c)
}

// lookup returns the container id with its pod and itself as NRI
// requests carry them.
func (r *Runtime) lookup(id string) (*fakeCtr, *api.PodSandbox, *api.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.ctr(id)
	if err != nil {
		return nil, nil, nil, err
	}
	pod, ctr := r.event(c)
	return c, pod, ctr, nil
}

// StartContainer runs the container's createRuntime hooks and "starts" it.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	c, pod, ctr, err := r.lookup(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	var hooks []rspec.Hook
	r.mu.Lock()
	if c.spec.Hooks != nil {
		hooks = c.spec.Hooks.CreateRuntime
	}
	r.mu.Unlock()
	if err := r.nri.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}); err != nil {
		return nil, err
	}
	for _, h := range hooks {
		cmd := exec.CommandContext(ctx, h.Path)
		cmd.Args = h.Args
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("hook %s: %v: %s", h.Path, err, out)
		}
	}
	r.mu.Lock()
	c.state, c.pid = runtimeapi.ContainerState_CONTAINER_RUNNING, uint32(4000+len(r.ctrs))
	pod, ctr = r.event(c)
	r.mu.Unlock()
	_ = r.nri.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer "stops" the container and applies the plugins' updates.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.mu.Lock()
	c, err := r.ctr(req.GetContainerId())
	if err != nil || c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, err
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	pod, ctr := r.event(c)
	r.mu.Unlock()
	resp, err := r.nri.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
	if err == nil {
		r.mu.Lock()
		r.applyLocked(resp.GetUpdate(), nil)
		r.mu.Unlock()
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes the container.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	r.mu.Lock()
	c, ok := r.ctrs[req.GetContainerId()]
	r.mu.Unlock()
	if !ok {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.id}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	delete(r.ctrs, c.id)
	pod, ctr := r.event(c)
	r.mu.Unlock()
	_ = r.nri.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ContainerStatus reports the container with its spec, as containerd's
// verbose status does.
func (r *Runtime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.ctr(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	info, err := json.Marshal(map[string]any{"pid": c.pid, "runtimeSpec": c.spec})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{
		Status: &runtimeapi.ContainerStatus{Id: c.id, Metadata: c.cfg.GetMetadata(), State: c.state, Labels: c.cfg.GetLabels()},
		Info:   map[string]string{"info": string(info)},
	}, nil
}

// ListContainers lists the containers whose CreateContainer returned.
func (r *Runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	f := req.GetFilter()
	for _, c := range r.ctrs {
		if _, err := r.ctr(c.id); err != nil || (f.GetPodSandboxId() != "" && c.podID != f.GetPodSandboxId()) || len(missingLabels(c.cfg.GetLabels(), f.GetLabelSelector())) > 0 {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: c.id, PodSandboxId: c.podID, Metadata: c.cfg.GetMetadata(), State: c.state})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// UpdateContainerResources asks NRI, then applies the plugins' version.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	c, pod, ctr, err := r.lookup(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	res := &api.LinuxResources{Memory: &api.LinuxMemory{}, Cpu: &api.LinuxCPU{}}
	if v := req.GetLinux().GetMemoryLimitInBytes(); v != 0 {
		res.Memory.Limit = &api.OptionalInt64{Value: v}
	}
	if v := req.GetLinux().GetCpuShares(); v != 0 {
		res.Cpu.Shares = &api.OptionalUInt64{Value: uint64(v)}
	}
	resp, err := r.nri.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res})
	if err != nil {
		return nil, err
	}
	own := &api.ContainerUpdate{ContainerId: c.id, Linux: &api.LinuxContainerUpdate{Resources: res}}
	var others []*api.ContainerUpdate
	for _, u := range resp.GetUpdate() {
		if u.GetContainerId() == c.id {
			own = u
		} else {
			others = append(others, u)
		}
	}
	r.mu.Lock()
	r.applyLocked(append(others, own), resp.GetEvict())
	pod, ctr = r.event(c)
	r.mu.Unlock()
	_ = r.nri.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// UpdatePodSandboxResources tells NRI.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	r.mu.Lock()
	p, err := r.pod(req.GetPodSandboxId())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	pod := r.nriPod(p)
	r.mu.Unlock()
	res := &api.LinuxResources{Memory: &api.LinuxMemory{Limit: &api.OptionalInt64{Value: req.GetResources().GetMemoryLimitInBytes()}}}
	if _, err := r.nri.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod, LinuxResources: res}); err != nil {
		return nil, err
	}
	_ = r.nri.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod})
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// ExecSync simulates `cat FILE` for the files the checks read.
func (r *Runtime) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.ctr(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if cmd := req.GetCmd(); len(cmd) != 2 || cmd[0] != "cat" {
		return nil, status.Errorf(codes.Unknown, "executable file %q not found", cmd[0])
	}
	out, ok := fakeFile(c.spec, req.GetCmd()[1])
	if !ok {
		return &runtimeapi.ExecSyncResponse{ExitCode: 1, Stderr: []byte("cat: " + req.GetCmd()[1] + ": No such file or directory\n")}, nil
	}
	return &runtimeapi.ExecSyncResponse{Stdout: []byte(out)}, nil
}

// fakeFile renders what a file inside a container would hold.
func fakeFile(s *rspec.Spec, path string) (string, bool) {
	res := resourcesOf(s)
	switch path {
	case "/proc/1/environ":
		return strings.Join(s.Process.Env, "\x00") + "\x00", true
	case "/proc/1/cmdline":
		return strings.Join(s.Process.Args, "\x00") + "\x00", true
	case "/sys/fs/cgroup/memory.max":
		if res.Memory != nil && res.Memory.Limit != nil {
			return strconv.FormatInt(*res.Memory.Limit, 10) + "\n", true
		}
		return "max\n", true
	case "/proc/1/oom_score_adj":
		if s.Process.OOMScoreAdj != nil {
			return strconv.Itoa(*s.Process.OOMScoreAdj) + "\n", true
		}
		return "0\n", true
	case "/proc/1/mountinfo":
		var b strings.Builder
		for i, m := range s.Mounts {
			fmt.Fprintf(&b, "%d 1 0:1 / %s rw - %s %s rw\n", 100+i, m.Destination, m.Type, m.Source)
		}
		return b.String(), true
	}
	return "", false
}
