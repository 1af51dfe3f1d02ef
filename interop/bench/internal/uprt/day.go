package uprt

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
)

// PrepareDay builds the requests of the node's day events for SendDay,
// with the bytes of nrikit's (converted before the day starts).
func (r *Runtime) PrepareDay(evs []workload.Event) {
	r.day = make([]func(context.Context) error, len(evs))
	for i, e := range evs {
		r.day[i] = r.dayCall(e)
	}
}

func (r *Runtime) dayCall(e workload.Event) func(context.Context) error {
	pod := convert(e.Pod, &api.PodSandbox{})
	var ctr *api.Container
	if e.Ctr != nil {
		ctr = convert(e.Ctr, &api.Container{})
	}
	switch e.Kind {
	case workload.RunPodSandbox:
		req := &api.RunPodSandboxRequest{Pod: pod}
		return func(ctx context.Context) error { return r.a.RunPodSandbox(ctx, req) }
	case workload.CreateContainer:
		req := &api.CreateContainerRequest{Pod: pod, Container: ctr}
		return func(ctx context.Context) error { _, err := r.a.CreateContainer(ctx, req); return err }
	case workload.StartContainer:
		req := &api.StartContainerRequest{Pod: pod, Container: ctr}
		return func(ctx context.Context) error { return r.a.StartContainer(ctx, req) }
	case workload.UpdateContainer:
		req := &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: convert(e.Resources, &api.LinuxResources{})}
		return func(ctx context.Context) error { _, err := r.a.UpdateContainer(ctx, req); return err }
	case workload.StopContainer:
		req := &api.StopContainerRequest{Pod: pod, Container: ctr}
		return func(ctx context.Context) error { _, err := r.a.StopContainer(ctx, req); return err }
	case workload.RemoveContainer:
		req := &api.RemoveContainerRequest{Pod: pod, Container: ctr}
		return func(ctx context.Context) error { return r.a.RemoveContainer(ctx, req) }
	case workload.StopPodSandbox:
		req := &api.StopPodSandboxRequest{Pod: pod}
		return func(ctx context.Context) error { return r.a.StopPodSandbox(ctx, req) }
	case workload.RemovePodSandbox:
		req := &api.RemovePodSandboxRequest{Pod: pod}
		return func(ctx context.Context) error { return r.a.RemovePodSandbox(ctx, req) }
	}
	return func(context.Context) error { return fmt.Errorf("uprt: unknown event kind %v", e.Kind) }
}

// SendDay sends the prepared event i.
func (r *Runtime) SendDay(ctx context.Context, i int) error {
	if err := r.day[i](ctx); err != nil {
		return fmt.Errorf("uprt: %w", err)
	}
	return nil
}
