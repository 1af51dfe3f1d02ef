package record

import (
	"context"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/record/recordpb"
)

// The Recorder's handlers: the stub's handler interfaces (package stub),
// one per request of the protocol's Plugin service. Each records the
// request as the Plugin service's message for its event and answers at
// once with no change and no error.

// Configure starts the recording's file for the runtime; the recorder
// subscribes to every event it implements (see [Subscription] for a
// runtime whose events are known).
func (r *Recorder) Configure(_ context.Context, _, runtime, version string) (api.EventMask, error) {
	r.add(item{configure: true, runtime: runtime, rtVer: version})
	return 0, nil
}

// Subscription returns the events a recorder subscribes to on a runtime
// that delivers supported (known: told or derived from its NRI version,
// not assumed): every event, but CreateContainer where the runtime has
// ValidateContainerAdjustment, which carries the same and more (the
// container as proposed and the combined adjustment, once every plugin
// has answered), so that a creation costs the runtime one delivery to the
// recorder rather than two; 0, every event the recorder handles,
// otherwise. A replay takes a validation without its CreateContainer for
// the creation (see docs/record.md).
func Subscription(supported api.EventMask, known bool) api.EventMask {
	if !known || !supported.IsSet(api.Event_VALIDATE_CONTAINER_ADJUSTMENT) {
		return 0
	}
	return api.AllEvents.Clear(api.Event_CREATE_CONTAINER)
}

// Synchronize records the runtime's snapshot of existing pods and
// containers.
func (r *Recorder) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	r.add(item{rec: &recordpb.Record{Kind: recordpb.Kind_SYNCHRONIZE, TimeUnixNano: time.Now().UnixNano()}, pods: pods, ctrs: ctrs})
	return nil, nil
}

// RunPodSandbox records the event.
func (r *Recorder) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.Event(api.Event_RUN_POD_SANDBOX, &api.RunPodSandboxRequest{Pod: pod})
	return nil
}

// UpdatePodSandbox records the event.
func (r *Recorder) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, overhead, resources *api.LinuxResources) error {
	r.Event(api.Event_UPDATE_POD_SANDBOX, &api.UpdatePodSandboxRequest{Pod: pod, OverheadLinuxResources: overhead, LinuxResources: resources})
	return nil
}

// PostUpdatePodSandbox records the event.
func (r *Recorder) PostUpdatePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.Event(api.Event_POST_UPDATE_POD_SANDBOX, &api.PostUpdatePodSandboxRequest{Pod: pod})
	return nil
}

// StopPodSandbox records the event.
func (r *Recorder) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.Event(api.Event_STOP_POD_SANDBOX, &api.StopPodSandboxRequest{Pod: pod})
	return nil
}

// RemovePodSandbox records the event.
func (r *Recorder) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	r.Event(api.Event_REMOVE_POD_SANDBOX, &api.RemovePodSandboxRequest{Pod: pod})
	return nil
}

// CreateContainer records the event and changes nothing.
func (r *Recorder) CreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	r.Event(api.Event_CREATE_CONTAINER, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	return nil, nil, nil
}

// PostCreateContainer records the event: the container as created, with
// every plugin's adjustment.
func (r *Recorder) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.Event(api.Event_POST_CREATE_CONTAINER, &api.PostCreateContainerRequest{Pod: pod, Container: ctr})
	return nil
}

// StartContainer records the event.
func (r *Recorder) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.Event(api.Event_START_CONTAINER, &api.StartContainerRequest{Pod: pod, Container: ctr})
	return nil
}

// PostStartContainer records the event.
func (r *Recorder) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.Event(api.Event_POST_START_CONTAINER, &api.PostStartContainerRequest{Pod: pod, Container: ctr})
	return nil
}

// UpdateContainer records the event and changes nothing.
func (r *Recorder) UpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container, res *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	r.Event(api.Event_UPDATE_CONTAINER, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: res})
	return nil, nil
}

// PostUpdateContainer records the event.
func (r *Recorder) PostUpdateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.Event(api.Event_POST_UPDATE_CONTAINER, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr})
	return nil
}

// StopContainer records the event and changes nothing.
func (r *Recorder) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	r.Event(api.Event_STOP_CONTAINER, &api.StopContainerRequest{Pod: pod, Container: ctr})
	return nil, nil
}

// RemoveContainer records the event.
func (r *Recorder) RemoveContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	r.Event(api.Event_REMOVE_CONTAINER, &api.RemoveContainerRequest{Pod: pod, Container: ctr})
	return nil
}

// ValidateContainerAdjustment records the request (the container as the
// runtime proposed it, the plugins' combined adjustment and which plugin
// set which field) and accepts it.
func (r *Recorder) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	r.Event(api.Event_VALIDATE_CONTAINER_ADJUSTMENT, req)
	return nil
}
