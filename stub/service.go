package stub

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nrikit/nrikit/api"
)

// dispatcher implements [api.PluginService] on top of a plugin's handlers,
// for one connection or one builtin instance.
type dispatcher struct {
	c *core
	// onConfigured is called with the outcome of each Configure request
	// (nil for builtins).
	onConfigured func(error)
	// onShutdown is called after the Shutdown handler returned (nil for
	// builtins).
	onShutdown func()
	// onSynchronize is called when a Synchronize request arrives (nil
	// for builtins).
	onSynchronize func()

	sync syncCollector
}

var _ api.PluginService = (*dispatcher)(nil)

// panicError is the error a recovered handler panic is turned into.
type panicError struct {
	handler string
	value   any
}

// Error implements the error interface.
func (e *panicError) Error() string {
	return fmt.Sprintf("stub: %s handler panicked: %v", e.handler, e.value)
}

// invoke calls a handler: it recovers a panic into an error and logs a
// handler that took longer than timeout.
func (d *dispatcher) invoke(ctx context.Context, name string, timeout time.Duration, fn func(context.Context) error) (err error) {
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{handler: name, value: v}
			d.c.log.Error("plugin handler panicked", "plugin", d.c.name, "handler", name,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
		took := time.Since(start)
		d.c.metrics.observe(name, took, err)
		if timeout > 0 && took > timeout {
			d.c.log.Warn("plugin handler took longer than the runtime's request timeout",
				"plugin", d.c.name, "handler", name, "duration", took, "timeout", timeout)
		}
	}()
	return fn(ctx)
}

// event invokes the handler of an event with the request timeout.
func (d *dispatcher) event(ctx context.Context, name string, fn func(context.Context) error) error {
	return d.invoke(ctx, name, d.c.requestTimeout(), fn)
}

// optOut turns an opt-out sentinel returned by a handler into the OptOut
// to answer with. ok is false if err is not a sentinel.
func optOut(err error, pod *api.PodSandbox, ctr *api.Container) (out *api.OptOut, ok bool) {
	switch {
	case errors.Is(err, ErrNotInterestedInPod):
		if id := pod.GetId(); id != "" {
			return &api.OptOut{PodIds: []string{id}}, true
		}
		return nil, true
	case errors.Is(err, ErrNotInterestedInContainer):
		if id := ctr.GetId(); id != "" {
			return &api.OptOut{ContainerIds: []string{id}}, true
		}
		return nil, true
	}
	return nil, false
}

// ignoreOptOut treats an opt-out sentinel as success, for responses
// without an OptOut field.
func ignoreOptOut(err error) error {
	if errors.Is(err, ErrNotInterestedInPod) || errors.Is(err, ErrNotInterestedInContainer) {
		return nil
	}
	return err
}

// errAnsweredLate is reported to the registration when the Configure
// request ended (the connection closed or the runtime gave up) before the
// plugin answered it: the answer cannot count.
var errAnsweredLate = errors.New("stub: Configure request ended before the plugin answered it")

// Configure implements [api.PluginService].
func (d *dispatcher) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	rsp, err := d.c.configure(ctx, d, req)
	if d.onConfigured != nil {
		outcome := err
		if outcome == nil && ctx.Err() != nil {
			outcome = fmt.Errorf("%w: %w", errAnsweredLate, ctx.Err())
		}
		d.onConfigured(outcome)
	}
	return rsp, err
}

// Synchronize implements [api.PluginService]; see syncCollector.
func (d *dispatcher) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	if d.onSynchronize != nil {
		d.onSynchronize()
	}
	pods, ctrs, last := d.sync.add(req)
	if !last {
		return &api.SynchronizeResponse{More: true}, nil
	}
	if d.c.h.synchronize == nil {
		return &api.SynchronizeResponse{}, nil
	}
	var (
		update []*api.ContainerUpdate
		out    *api.OptOut
	)
	err := d.invoke(ctx, "Synchronize", d.c.syncTimeout(), func(ctx context.Context) error {
		var err error
		update, out, err = d.c.h.synchronize(ctx, pods, ctrs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.SynchronizeResponse{Update: update, OptOut: out}, nil
}

// Shutdown implements [api.PluginService]: it calls the Shutdown handler,
// then the stub stops.
func (d *dispatcher) Shutdown(ctx context.Context, _ *api.Empty) (*api.Empty, error) {
	if h := d.c.h.shutdown; h != nil {
		_ = d.event(ctx, "Shutdown", func(ctx context.Context) error { h(ctx); return nil })
	}
	if d.onShutdown != nil {
		d.onShutdown()
	}
	return &api.Empty{}, nil
}

// RunPodSandbox implements [api.PluginService].
func (d *dispatcher) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	h := d.c.h.runPod
	if h == nil {
		return &api.RunPodSandboxResponse{}, nil
	}
	err := d.event(ctx, "RunPodSandbox", func(ctx context.Context) error { return h(ctx, req.GetPod()) })
	if errors.Is(err, ErrNotInterestedInPod) {
		out, _ := optOut(err, req.GetPod(), nil)
		return &api.RunPodSandboxResponse{OptOut: out}, nil
	}
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox implements [api.PluginService].
func (d *dispatcher) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	h := d.c.h.updatePod
	if h == nil {
		return &api.UpdatePodSandboxResponse{}, nil
	}
	err := d.event(ctx, "UpdatePodSandbox", func(ctx context.Context) error {
		return h(ctx, req.GetPod(), req.GetOverheadLinuxResources(), req.GetLinuxResources())
	})
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// podEvent dispatches a pod event whose handler returns only an error.
func (d *dispatcher) podEvent(ctx context.Context, name string, h podFunc, pod *api.PodSandbox) error {
	if h == nil {
		return nil
	}
	return ignoreOptOut(d.event(ctx, name, func(ctx context.Context) error { return h(ctx, pod) }))
}

// containerEvent dispatches a container event whose handler returns only
// an error.
func (d *dispatcher) containerEvent(ctx context.Context, name string, h containerFunc, pod *api.PodSandbox, ctr *api.Container) error {
	if h == nil {
		return nil
	}
	return ignoreOptOut(d.event(ctx, name, func(ctx context.Context) error { return h(ctx, pod, ctr) }))
}

// PostUpdatePodSandbox implements [api.PluginService].
func (d *dispatcher) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	if err := d.podEvent(ctx, "PostUpdatePodSandbox", d.c.h.postUpdatePod, req.GetPod()); err != nil {
		return nil, err
	}
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox implements [api.PluginService].
func (d *dispatcher) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	if err := d.podEvent(ctx, "StopPodSandbox", d.c.h.stopPod, req.GetPod()); err != nil {
		return nil, err
	}
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox implements [api.PluginService].
func (d *dispatcher) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	if err := d.podEvent(ctx, "RemovePodSandbox", d.c.h.removePod, req.GetPod()); err != nil {
		return nil, err
	}
	return &api.RemovePodSandboxResponse{}, nil
}

// CreateContainer implements [api.PluginService].
func (d *dispatcher) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	h := d.c.h.createContainer
	if h == nil {
		return &api.CreateContainerResponse{}, nil
	}
	rsp := &api.CreateContainerResponse{}
	err := d.event(ctx, "CreateContainer", func(ctx context.Context) error {
		var err error
		rsp.Adjust, rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer())
		return err
	})
	if out, ok := optOut(err, req.GetPod(), req.GetContainer()); ok {
		rsp.OptOut = out
		return rsp, nil
	}
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// PostCreateContainer implements [api.PluginService].
func (d *dispatcher) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	if err := d.containerEvent(ctx, "PostCreateContainer", d.c.h.postCreateContainer, req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer implements [api.PluginService].
func (d *dispatcher) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	if err := d.containerEvent(ctx, "StartContainer", d.c.h.startContainer, req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer implements [api.PluginService].
func (d *dispatcher) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	if err := d.containerEvent(ctx, "PostStartContainer", d.c.h.postStartContainer, req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer implements [api.PluginService].
func (d *dispatcher) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	h := d.c.h.updateContainer
	if h == nil {
		return &api.UpdateContainerResponse{}, nil
	}
	rsp := &api.UpdateContainerResponse{}
	err := d.event(ctx, "UpdateContainer", func(ctx context.Context) error {
		var err error
		rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
		return err
	})
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return rsp, nil
}

// PostUpdateContainer implements [api.PluginService].
func (d *dispatcher) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	if err := d.containerEvent(ctx, "PostUpdateContainer", d.c.h.postUpdateContainer, req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer implements [api.PluginService].
func (d *dispatcher) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	h := d.c.h.stopContainer
	if h == nil {
		return &api.StopContainerResponse{}, nil
	}
	rsp := &api.StopContainerResponse{}
	err := d.event(ctx, "StopContainer", func(ctx context.Context) error {
		var err error
		rsp.Update, err = h(ctx, req.GetPod(), req.GetContainer())
		return err
	})
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return rsp, nil
}

// RemoveContainer implements [api.PluginService].
func (d *dispatcher) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	if err := d.containerEvent(ctx, "RemoveContainer", d.c.h.removeContainer, req.GetPod(), req.GetContainer()); err != nil {
		return nil, err
	}
	return &api.RemoveContainerResponse{}, nil
}

// StateChange implements [api.PluginService]: runtimes of NRI v0.9 and
// older deliver the events without a result through it.
func (d *dispatcher) StateChange(ctx context.Context, evt *api.StateChangeEvent) (*api.Empty, error) {
	pod, ctr := evt.GetPod(), evt.GetContainer()
	h := &d.c.h
	var err error
	switch e := evt.GetEvent(); e {
	case api.Event_RUN_POD_SANDBOX:
		err = d.podEvent(ctx, e.Name(), h.runPod, pod)
	case api.Event_POST_UPDATE_POD_SANDBOX:
		err = d.podEvent(ctx, e.Name(), h.postUpdatePod, pod)
	case api.Event_STOP_POD_SANDBOX:
		err = d.podEvent(ctx, e.Name(), h.stopPod, pod)
	case api.Event_REMOVE_POD_SANDBOX:
		err = d.podEvent(ctx, e.Name(), h.removePod, pod)
	case api.Event_POST_CREATE_CONTAINER:
		err = d.containerEvent(ctx, e.Name(), h.postCreateContainer, pod, ctr)
	case api.Event_START_CONTAINER:
		err = d.containerEvent(ctx, e.Name(), h.startContainer, pod, ctr)
	case api.Event_POST_START_CONTAINER:
		err = d.containerEvent(ctx, e.Name(), h.postStartContainer, pod, ctr)
	case api.Event_POST_UPDATE_CONTAINER:
		err = d.containerEvent(ctx, e.Name(), h.postUpdateContainer, pod, ctr)
	case api.Event_REMOVE_CONTAINER:
		err = d.containerEvent(ctx, e.Name(), h.removeContainer, pod, ctr)
	default:
		d.c.log.Debug("ignoring StateChange for an event that has a dedicated request", "plugin", d.c.name, "event", e.Name())
	}
	if err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment implements [api.PluginService]: a handler
// error rejects the adjustment with the error's message as the reason; a
// panic fails the request.
func (d *dispatcher) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	h := d.c.h.validate
	if h == nil {
		return &api.ValidateContainerAdjustmentResponse{}, nil
	}
	err := ignoreOptOut(d.event(ctx, "ValidateContainerAdjustment", func(ctx context.Context) error { return h(ctx, req) }))
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
