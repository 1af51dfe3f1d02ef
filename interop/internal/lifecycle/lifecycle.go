// Package lifecycle drives a runtime (nrikit's or upstream's, behind the
// Runtime interface) through the whole life of the fixture pod and
// container, and checks what a recording test plugin saw and answered
// against what the runtime was given and returned.
package lifecycle

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/internal/fixture"
)

// Runtime is the runtime side of the events, in nrikit's types.
type Runtime interface {
	RunPodSandbox(context.Context, *api.RunPodSandboxRequest) error
	UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) error
	PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) error
	StopPodSandbox(context.Context, *api.StopPodSandboxRequest) error
	RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) error
	CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error)
	PostCreateContainer(context.Context, *api.PostCreateContainerRequest) error
	StartContainer(context.Context, *api.StartContainerRequest) error
	PostStartContainer(context.Context, *api.PostStartContainerRequest) error
	UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error)
	PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) error
	StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error)
	RemoveContainer(context.Context, *api.RemoveContainerRequest) error
}

// Sent is one request given to the runtime.
type Sent struct {
	Event api.Event
	Req   proto.Message
}

// Results are the requests given to the runtime, in order, and its
// answers to the mutating container events.
type Results struct {
	Sent   []Sent
	Create *api.CreateContainerResponse
	Update *api.UpdateContainerResponse
	Stop   *api.StopContainerResponse
}

// Request returns the request sent for e, or nil.
func (r *Results) Request(e api.Event) proto.Message {
	for _, s := range r.Sent {
		if s.Event == e {
			return s.Req
		}
	}
	return nil
}

// Drive runs the pod and the container through every event: the pod is
// run and updated, the container created, started, updated, stopped and
// removed, the pod stopped and removed. Each request is a fresh copy, so
// the runtime may modify it (upstream's does).
func Drive(ctx context.Context, rt Runtime) (*Results, error) {
	res := &Results{}
	pod := fixture.Pod
	ctr := fixture.Container
	step := func(e api.Event, req proto.Message, call func(proto.Message) error) error {
		res.Sent = append(res.Sent, Sent{Event: e, Req: proto.Clone(req)})
		if err := call(req); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		return nil
	}
	created, running, stopped := api.ContainerState_CONTAINER_CREATED, api.ContainerState_CONTAINER_RUNNING, api.ContainerState_CONTAINER_STOPPED
	steps := []struct {
		e    api.Event
		req  proto.Message
		call func(proto.Message) error
	}{
		{api.Event_RUN_POD_SANDBOX, &api.RunPodSandboxRequest{Pod: pod()}, func(m proto.Message) error {
			return rt.RunPodSandbox(ctx, m.(*api.RunPodSandboxRequest))
		}},
		{api.Event_UPDATE_POD_SANDBOX, &api.UpdatePodSandboxRequest{Pod: pod(), OverheadLinuxResources: fixture.PodOverhead(), LinuxResources: fixture.Resources()}, func(m proto.Message) error {
			return rt.UpdatePodSandbox(ctx, m.(*api.UpdatePodSandboxRequest))
		}},
		{api.Event_POST_UPDATE_POD_SANDBOX, &api.PostUpdatePodSandboxRequest{Pod: pod()}, func(m proto.Message) error {
			return rt.PostUpdatePodSandbox(ctx, m.(*api.PostUpdatePodSandboxRequest))
		}},
		{api.Event_CREATE_CONTAINER, &api.CreateContainerRequest{Pod: pod(), Container: ctr(api.ContainerState_CONTAINER_UNKNOWN)}, func(m proto.Message) (err error) {
			res.Create, err = rt.CreateContainer(ctx, m.(*api.CreateContainerRequest))
			return err
		}},
		{api.Event_POST_CREATE_CONTAINER, &api.PostCreateContainerRequest{Pod: pod(), Container: ctr(created)}, func(m proto.Message) error {
			return rt.PostCreateContainer(ctx, m.(*api.PostCreateContainerRequest))
		}},
		{api.Event_START_CONTAINER, &api.StartContainerRequest{Pod: pod(), Container: ctr(created)}, func(m proto.Message) error {
			return rt.StartContainer(ctx, m.(*api.StartContainerRequest))
		}},
		{api.Event_POST_START_CONTAINER, &api.PostStartContainerRequest{Pod: pod(), Container: ctr(running)}, func(m proto.Message) error {
			return rt.PostStartContainer(ctx, m.(*api.PostStartContainerRequest))
		}},
		{api.Event_UPDATE_CONTAINER, &api.UpdateContainerRequest{Pod: pod(), Container: ctr(running), LinuxResources: fixture.Resources()}, func(m proto.Message) (err error) {
			res.Update, err = rt.UpdateContainer(ctx, m.(*api.UpdateContainerRequest))
			return err
		}},
		{api.Event_POST_UPDATE_CONTAINER, &api.PostUpdateContainerRequest{Pod: pod(), Container: ctr(running)}, func(m proto.Message) error {
			return rt.PostUpdateContainer(ctx, m.(*api.PostUpdateContainerRequest))
		}},
		{api.Event_STOP_CONTAINER, &api.StopContainerRequest{Pod: pod(), Container: ctr(running)}, func(m proto.Message) (err error) {
			res.Stop, err = rt.StopContainer(ctx, m.(*api.StopContainerRequest))
			return err
		}},
		{api.Event_REMOVE_CONTAINER, &api.RemoveContainerRequest{Pod: pod(), Container: ctr(stopped)}, func(m proto.Message) error {
			return rt.RemoveContainer(ctx, m.(*api.RemoveContainerRequest))
		}},
		{api.Event_STOP_POD_SANDBOX, &api.StopPodSandboxRequest{Pod: pod()}, func(m proto.Message) error {
			return rt.StopPodSandbox(ctx, m.(*api.StopPodSandboxRequest))
		}},
		{api.Event_REMOVE_POD_SANDBOX, &api.RemovePodSandboxRequest{Pod: pod()}, func(m proto.Message) error {
			return rt.RemovePodSandbox(ctx, m.(*api.RemovePodSandboxRequest))
		}},
	}
	for _, s := range steps {
		if err := step(s.e, s.req, s.call); err != nil {
			return res, err
		}
	}
	return res, nil
}
