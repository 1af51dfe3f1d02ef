package api

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/stub/wasmguest"
)

// RegisterPlugin makes p the module's plugin, as upstream's does; call it
// from an init function of a module built with -buildmode=c-shared. The
// module is served by nrikit's guest (stub/wasmguest), which exports the
// ABI and hands p each request through the handlers of servedPlugin, so
// the module runs on nrikit's runtime and upstream's alike. A request's
// fields that the guest does not pass to handlers (Configure's timeouts
// and NRI version) do not reach p.
func RegisterPlugin(p Plugin) { wasmguest.Register(servedPlugin{p}) }

// NewHostFunctions returns the host's functions.
func NewHostFunctions() HostFunctions { return hostFunctions{} }

type hostFunctions struct{}

// Log writes req's message to the runtime's log at its level.
func (hostFunctions) Log(_ context.Context, req *LogRequest) (*Empty, error) {
	wasmguest.Log(req.GetLevel(), req.GetMsg())
	return &Empty{}, nil
}

// servedPlugin implements every handler interface of the guest by
// calling its Plugin's method with the request the handler's arguments
// make, and returns that method's answer.
type servedPlugin struct{ p Plugin }

func (s servedPlugin) Configure(ctx context.Context, config, runtime, version string) (EventMask, error) {
	rsp, err := s.p.Configure(ctx, &ConfigureRequest{Config: config, RuntimeName: runtime, RuntimeVersion: version})
	return EventMask(rsp.GetEvents()), err
}

func (s servedPlugin) Synchronize(ctx context.Context, pods []*PodSandbox, ctrs []*Container) ([]*ContainerUpdate, error) {
	rsp, err := s.p.Synchronize(ctx, &SynchronizeRequest{Pods: pods, Containers: ctrs})
	return rsp.GetUpdate(), err
}

func (s servedPlugin) Shutdown(ctx context.Context) { _, _ = s.p.Shutdown(ctx, &Empty{}) }

func (s servedPlugin) RunPodSandbox(ctx context.Context, pod *PodSandbox) error {
	_, err := s.p.RunPodSandbox(ctx, &RunPodSandboxRequest{Pod: pod})
	return err
}

func (s servedPlugin) UpdatePodSandbox(ctx context.Context, pod *PodSandbox, overhead, resources *LinuxResources) error {
	_, err := s.p.UpdatePodSandbox(ctx, &UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: overhead, LinuxResources: resources})
	return err
}

func (s servedPlugin) PostUpdatePodSandbox(ctx context.Context, pod *PodSandbox) error {
	_, err := s.p.PostUpdatePodSandbox(ctx, &PostUpdatePodSandboxRequest{Pod: pod})
	return err
}

func (s servedPlugin) StopPodSandbox(ctx context.Context, pod *PodSandbox) error {
	_, err := s.p.StopPodSandbox(ctx, &StopPodSandboxRequest{Pod: pod})
	return err
}

func (s servedPlugin) RemovePodSandbox(ctx context.Context, pod *PodSandbox) error {
	_, err := s.p.RemovePodSandbox(ctx, &RemovePodSandboxRequest{Pod: pod})
	return err
}

func (s servedPlugin) CreateContainer(ctx context.Context, pod *PodSandbox, ctr *Container) (*ContainerAdjustment, []*ContainerUpdate, error) {
	adjust, update, _, err := s.CreateContainerWithEvictions(ctx, pod, ctr)
	return adjust, update, err
}

func (s servedPlugin) CreateContainerWithEvictions(ctx context.Context, pod *PodSandbox, ctr *Container) (*ContainerAdjustment, []*ContainerUpdate, []*ContainerEviction, error) {
	rsp, err := s.p.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: ctr})
	return rsp.GetAdjust(), rsp.GetUpdate(), rsp.GetEvict(), err
}

func (s servedPlugin) PostCreateContainer(ctx context.Context, pod *PodSandbox, ctr *Container) error {
	_, err := s.p.PostCreateContainer(ctx, &PostCreateContainerRequest{Pod: pod, Container: ctr})
	return err
}

func (s servedPlugin) StartContainer(ctx context.Context, pod *PodSandbox, ctr *Container) error {
	_, err := s.p.StartContainer(ctx, &StartContainerRequest{Pod: pod, Container: ctr})
	return err
}

func (s servedPlugin) PostStartContainer(ctx context.Context, pod *PodSandbox, ctr *Container) error {
	_, err := s.p.PostStartContainer(ctx, &PostStartContainerRequest{Pod: pod, Container: ctr})
	return err
}

func (s servedPlugin) UpdateContainer(ctx context.Context, pod *PodSandbox, ctr *Container, res *LinuxResources) ([]*ContainerUpdate, error) {
	update, _, err := s.UpdateContainerWithEvictions(ctx, pod, ctr, res)
	return update, err
}

func (s servedPlugin) UpdateContainerWithEvictions(ctx context.Context, pod *PodSandbox, ctr *Container, res *LinuxResources) ([]*ContainerUpdate, []*ContainerEviction, error) {
	rsp, err := s.p.UpdateContainer(ctx, &UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res})
	return rsp.GetUpdate(), rsp.GetEvict(), err
}

func (s servedPlugin) PostUpdateContainer(ctx context.Context, pod *PodSandbox, ctr *Container) error {
	_, err := s.p.PostUpdateContainer(ctx, &PostUpdateContainerRequest{Pod: pod, Container: ctr})
	return err
}

func (s servedPlugin) StopContainer(ctx context.Context, pod *PodSandbox, ctr *Container) ([]*ContainerUpdate, error) {
	rsp, err := s.p.StopContainer(ctx, &StopContainerRequest{Pod: pod, Container: ctr})
	return rsp.GetUpdate(), err
}

func (s servedPlugin) RemoveContainer(ctx context.Context, pod *PodSandbox, ctr *Container) error {
	_, err := s.p.RemoveContainer(ctx, &RemoveContainerRequest{Pod: pod, Container: ctr})
	return err
}

func (s servedPlugin) ValidateContainerAdjustment(ctx context.Context, req *ValidateContainerAdjustmentRequest) error {
	rsp, err := s.p.ValidateContainerAdjustment(ctx, req)
	if err == nil && rsp.GetReject() {
		err = errors.New(rsp.GetReason())
	}
	return err
}
