package stub

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	phandlers "github.com/nrikit/nrikit/stub/internal/handlers"
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
	// gate enforces the plugin's scope on this connection, if the
	// runtime does not (nil: it does, or there is none); set by
	// Configure.
	gate atomic.Pointer[scopeGate]
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

// event is the path of every event request to the plugin's handler: the
// scope gate decides whether the plugin is to see the event about pod
// (and ctr, for a container event), and returns the opt-out sentinel to
// answer it with if not (see scopeGate.admit); then fn, nil if the plugin
// has no handler for e, is invoked with the request timeout.
func (d *dispatcher) event(ctx context.Context, e api.Event, pod *api.PodSandbox, ctr *api.Container, fn func(context.Context) error) error {
	if err := d.gate.Load().admit(e, pod, ctr); err != nil {
		d.c.log.Debug("event out of the plugin's scope: answered without calling the handler",
			"plugin", d.c.name, "event", e.Name(), "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName())
		return err
	}
	if fn == nil {
		return nil
	}
	return d.invoke(ctx, e.Name(), d.c.requestTimeout(), fn)
}

// optOut turns an opt-out sentinel returned by a handler into the OptOut
// to answer with. ok is false if err is not a sentinel.
func optOut(err error, pod *api.PodSandbox, ctr *api.Container) (*api.OptOut, bool) {
	return phandlers.OptOut(err, pod, ctr)
}

// ignoreOptOut treats an opt-out sentinel as success, for responses
// without an OptOut field.
func ignoreOptOut(err error) error { return phandlers.IgnoreOptOut(err) }

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
	pods, ctrs = d.gate.Load().seed(pods, ctrs)
	if d.c.h.Synchronize == nil {
		return &api.SynchronizeResponse{}, nil
	}
	var (
		update []*api.ContainerUpdate
		out    *api.OptOut
	)
	err := d.invoke(ctx, "Synchronize", d.c.syncTimeout(), func(ctx context.Context) error {
		var err error
		update, out, err = d.c.h.Synchronize(ctx, pods, ctrs)
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
	if h := d.c.h.Shutdown; h != nil {
		_ = d.invoke(ctx, "Shutdown", d.c.requestTimeout(), func(ctx context.Context) error { h(ctx); return nil })
	}
	if d.onShutdown != nil {
		d.onShutdown()
	}
	return &api.Empty{}, nil
}

// RunPodSandbox implements [api.PluginService].
func (d *dispatcher) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	err := d.podEvent(ctx, api.Event_RUN_POD_SANDBOX, d.c.h.RunPod, req.GetPod())
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
	var fn func(context.Context) error
	if h := d.c.h.UpdatePod; h != nil {
		fn = func(ctx context.Context) error {
			return h(ctx, req.GetPod(), req.GetOverheadLinuxResources(), req.GetLinuxResources())
		}
	}
	err := d.event(ctx, api.Event_UPDATE_POD_SANDBOX, req.GetPod(), nil, fn)
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// podEvent dispatches a pod event whose handler (nil: none) returns only
// an error, keeping opt-out sentinels.
func (d *dispatcher) podEvent(ctx context.Context, e api.Event, h podFunc, pod *api.PodSandbox) error {
	var fn func(context.Context) error
	if h != nil {
		fn = func(ctx context.Context) error { return h(ctx, pod) }
	}
	return d.event(ctx, e, pod, nil, fn)
}

// containerEvent dispatches a container event whose handler (nil: none)
// returns only an error, keeping opt-out sentinels.
func (d *dispatcher) containerEvent(ctx context.Context, e api.Event, h containerFunc, pod *api.PodSandbox, ctr *api.Container) error {
	var fn func(context.Context) error
	if h != nil {
		fn = func(ctx context.Context) error { return h(ctx, pod, ctr) }
	}
	return d.event(ctx, e, pod, ctr, fn)
}

// PostUpdatePodSandbox implements [api.PluginService].
func (d *dispatcher) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	if err := ignoreOptOut(d.podEvent(ctx, api.Event_POST_UPDATE_POD_SANDBOX, d.c.h.PostUpdatePod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox implements [api.PluginService].
func (d *dispatcher) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	if err := ignoreOptOut(d.podEvent(ctx, api.Event_STOP_POD_SANDBOX, d.c.h.StopPod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox implements [api.PluginService].
func (d *dispatcher) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	if err := ignoreOptOut(d.podEvent(ctx, api.Event_REMOVE_POD_SANDBOX, d.c.h.RemovePod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.RemovePodSandboxResponse{}, nil
}

// CreateContainer implements [api.PluginService].
func (d *dispatcher) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	rsp := &api.CreateContainerResponse{}
	var fn func(context.Context) error
	if h := d.c.h.CreateContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Adjust, rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer())
			return err
		}
	}
	err := d.event(ctx, api.Event_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), fn)
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
	if err := ignoreOptOut(d.containerEvent(ctx, api.Event_POST_CREATE_CONTAINER, d.c.h.PostCreateContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer implements [api.PluginService].
func (d *dispatcher) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	if err := ignoreOptOut(d.containerEvent(ctx, api.Event_START_CONTAINER, d.c.h.StartContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer implements [api.PluginService].
func (d *dispatcher) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	if err := ignoreOptOut(d.containerEvent(ctx, api.Event_POST_START_CONTAINER, d.c.h.PostStartContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer implements [api.PluginService].
func (d *dispatcher) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	rsp := &api.UpdateContainerResponse{}
	var fn func(context.Context) error
	if h := d.c.h.UpdateContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
			return err
		}
	}
	err := d.event(ctx, api.Event_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), fn)
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return rsp, nil
}

// PostUpdateContainer implements [api.PluginService].
func (d *dispatcher) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	if err := ignoreOptOut(d.containerEvent(ctx, api.Event_POST_UPDATE_CONTAINER, d.c.h.PostUpdateContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer implements [api.PluginService].
func (d *dispatcher) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	rsp := &api.StopContainerResponse{}
	var fn func(context.Context) error
	if h := d.c.h.StopContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Update, err = h(ctx, req.GetPod(), req.GetContainer())
			return err
		}
	}
	err := d.event(ctx, api.Event_STOP_CONTAINER, req.GetPod(), req.GetContainer(), fn)
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return rsp, nil
}

// RemoveContainer implements [api.PluginService].
func (d *dispatcher) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	if err := ignoreOptOut(d.containerEvent(ctx, api.Event_REMOVE_CONTAINER, d.c.h.RemoveContainer, req.GetPod(), req.GetContainer())); err != nil {
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
		err = d.podEvent(ctx, e, h.RunPod, pod)
	case api.Event_POST_UPDATE_POD_SANDBOX:
		err = d.podEvent(ctx, e, h.PostUpdatePod, pod)
	case api.Event_STOP_POD_SANDBOX:
		err = d.podEvent(ctx, e, h.StopPod, pod)
	case api.Event_REMOVE_POD_SANDBOX:
		err = d.podEvent(ctx, e, h.RemovePod, pod)
	case api.Event_POST_CREATE_CONTAINER:
		err = d.containerEvent(ctx, e, h.PostCreateContainer, pod, ctr)
	case api.Event_START_CONTAINER:
		err = d.containerEvent(ctx, e, h.StartContainer, pod, ctr)
	case api.Event_POST_START_CONTAINER:
		err = d.containerEvent(ctx, e, h.PostStartContainer, pod, ctr)
	case api.Event_POST_UPDATE_CONTAINER:
		err = d.containerEvent(ctx, e, h.PostUpdateContainer, pod, ctr)
	case api.Event_REMOVE_CONTAINER:
		err = d.containerEvent(ctx, e, h.RemoveContainer, pod, ctr)
	default:
		d.c.log.Debug("ignoring StateChange for an event that has a dedicated request", "plugin", d.c.name, "event", e.Name())
	}
	if err = ignoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment implements [api.PluginService]: a handler
// error rejects the adjustment with the error's message as the reason; a
// panic fails the request.
func (d *dispatcher) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	var fn func(context.Context) error
	if h := d.c.h.Validate; h != nil {
		fn = func(ctx context.Context) error { return h(ctx, req) }
	}
	err := ignoreOptOut(d.event(ctx, api.Event_VALIDATE_CONTAINER_ADJUSTMENT, req.GetPod(), req.GetContainer(), fn))
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
