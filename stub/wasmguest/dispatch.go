package wasmguest

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// dispatch decodes the request of fn, serves it and returns the response.
func (g *Guest) dispatch(ctx context.Context, fn string, b []byte) (proto.Message, error) {
	switch fn {
	case FuncConfigure:
		req := &api.ConfigureRequest{}
		if err := decode(fn, b, req); err != nil {
			return nil, err
		}
		return g.configure(ctx, req)
	case FuncSynchronize:
		req := &api.SynchronizeRequest{}
		if err := decode(fn, b, req); err != nil {
			return nil, err
		}
		return g.synchronize(ctx, req)
	case FuncShutdown:
		if h := g.h.Shutdown; h != nil {
			_ = g.invoke("Shutdown", func() error { h(ctx); return nil })
		}
		return &api.Empty{}, nil
	case FuncStateChange:
		req := &api.StateChangeEvent{}
		if err := decode(fn, b, req); err != nil {
			return nil, err
		}
		return &api.Empty{}, g.stateChange(ctx, req)
	case FuncValidate:
		req := &api.ValidateContainerAdjustmentRequest{}
		if err := decode(fn, b, req); err != nil {
			return nil, err
		}
		return g.validate(ctx, req)
	}
	if rsp, ok, err := g.podRequest(ctx, fn, b); ok {
		return rsp, err
	}
	if rsp, ok, err := g.containerRequest(ctx, fn, b); ok {
		return rsp, err
	}
	return nil, fmt.Errorf("wasmguest: unknown function %q", fn)
}

// configure answers Configure: it calls the plugin's Configure handler and
// subscribes to the events wanted, those the runtime delivers if it says.
func (g *Guest) configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	wanted := g.wanted
	if h := g.h.Configure; h != nil {
		var events api.EventMask
		err := g.invoke("Configure", func() error {
			var err error
			events, err = h(ctx, req.GetConfig(), req.GetRuntimeName(), req.GetRuntimeVersion())
			return err
		})
		if err != nil {
			return nil, err
		}
		if events != 0 {
			if extra := events &^ g.implemented; extra != 0 {
				return nil, fmt.Errorf("wasmguest: Configure handler subscribed to events without handlers: %s", extra)
			}
			wanted = events
		}
	}
	if supported := api.EventMask(req.GetSupportedEvents()); supported != 0 {
		if dropped := wanted &^ supported; dropped != 0 {
			g.cfg.log(api.LogRequest_LEVEL_INFO, "runtime does not deliver "+dropped.String()+"; not subscribing to them")
		}
		wanted &= supported
		if wanted == 0 {
			return nil, errors.New("wasmguest: the runtime delivers none of the events the plugin handles")
		}
	}
	var gt *gate
	if g.cfg.newGate != nil {
		var err error
		if gt, err = g.cfg.newGate(g.cfg.scope, req); err != nil {
			return nil, err
		}
	}
	g.gate = gt
	g.sync = syncParts{}
	return &api.ConfigureResponse{Events: int32(wanted), FailurePolicy: g.cfg.policy, Scope: g.cfg.scope}, nil
}

// syncParts collects the parts of a Synchronize request split by the
// runtime (all but the last have more set).
type syncParts struct {
	pods []*api.PodSandbox
	ctrs []*api.Container
}

// synchronize answers Synchronize once its last part arrived.
func (g *Guest) synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	g.sync.pods = append(g.sync.pods, req.GetPods()...)
	g.sync.ctrs = append(g.sync.ctrs, req.GetContainers()...)
	if req.GetMore() {
		return &api.SynchronizeResponse{More: true}, nil
	}
	pods, ctrs := g.gate.seed(g.sync.pods, g.sync.ctrs)
	g.sync = syncParts{}
	h := g.h.Synchronize
	if h == nil {
		return &api.SynchronizeResponse{}, nil
	}
	rsp := &api.SynchronizeResponse{}
	err := g.invoke("Synchronize", func() error {
		var err error
		rsp.Update, rsp.OptOut, err = h(ctx, pods, ctrs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// podEvent calls a pod event's handler, if any and if the pod is in scope.
func (g *Guest) podEvent(ctx context.Context, name string, h podFunc, pod *api.PodSandbox) error {
	if h == nil || !g.gate.admitPod(pod) {
		return nil
	}
	return g.invoke(name, func() error { return h(ctx, pod) })
}

// containerEvent calls a container event's handler, if any and if the
// container is in scope.
func (g *Guest) containerEvent(ctx context.Context, name string, h containerFunc, pod *api.PodSandbox, ctr *api.Container) error {
	if h == nil || !g.gate.admitContainer(pod, ctr) {
		return nil
	}
	return g.invoke(name, func() error { return h(ctx, pod, ctr) })
}

// podRequest serves the pod requests; ok is false if fn is not one.
func (g *Guest) podRequest(ctx context.Context, fn string, b []byte) (rsp proto.Message, ok bool, err error) {
	var req interface {
		proto.Message
		GetPod() *api.PodSandbox
	}
	switch fn {
	case FuncRunPod:
		req, rsp = &api.RunPodSandboxRequest{}, &api.RunPodSandboxResponse{}
	case FuncUpdatePod:
		req, rsp = &api.UpdatePodSandboxRequest{}, &api.UpdatePodSandboxResponse{}
	case FuncPostUpdatePod:
		req, rsp = &api.PostUpdatePodSandboxRequest{}, &api.PostUpdatePodSandboxResponse{}
	case FuncStopPod:
		req, rsp = &api.StopPodSandboxRequest{}, &api.StopPodSandboxResponse{}
	case FuncRemovePod:
		req, rsp = &api.RemovePodSandboxRequest{}, &api.RemovePodSandboxResponse{}
	default:
		return nil, false, nil
	}
	if err := decode(fn, b, req); err != nil {
		return nil, true, err
	}
	pod, h := req.GetPod(), &g.h
	switch r := req.(type) {
	case *api.RunPodSandboxRequest:
		if h.RunPod != nil && !g.gate.admitPod(pod) {
			return &api.RunPodSandboxResponse{OptOut: &api.OptOut{PodIds: []string{pod.GetId()}}}, true, nil
		}
		err = g.podEvent(ctx, "RunPodSandbox", h.RunPod, pod)
	case *api.UpdatePodSandboxRequest:
		if h.UpdatePod != nil && g.gate.admitPod(pod) {
			err = g.invoke("UpdatePodSandbox", func() error {
				return h.UpdatePod(ctx, pod, r.GetOverheadLinuxResources(), r.GetLinuxResources())
			})
		}
	case *api.PostUpdatePodSandboxRequest:
		err = g.podEvent(ctx, "PostUpdatePodSandbox", h.PostUpdatePod, pod)
	case *api.StopPodSandboxRequest:
		err = g.podEvent(ctx, "StopPodSandbox", h.StopPod, pod)
	case *api.RemovePodSandboxRequest:
		err = g.podEvent(ctx, "RemovePodSandbox", h.RemovePod, pod)
	}
	if run, ok := rsp.(*api.RunPodSandboxResponse); ok && errors.Is(err, ErrNotInterestedInPod) {
		run.OptOut, _ = handlers.OptOut(err, pod, nil)
		return run, true, nil
	}
	if err = handlers.IgnoreOptOut(err); err != nil {
		return nil, true, err
	}
	return rsp, true, nil
}

// containerRequest serves the container requests other than
// ValidateContainerAdjustment; ok is false if fn is not one.
func (g *Guest) containerRequest(ctx context.Context, fn string, b []byte) (rsp proto.Message, ok bool, err error) {
	var req interface {
		proto.Message
		GetPod() *api.PodSandbox
		GetContainer() *api.Container
	}
	var simple containerFunc
	var name string
	h := &g.h
	switch fn {
	case FuncCreateContainer:
		req = &api.CreateContainerRequest{}
	case FuncUpdateContainer:
		req = &api.UpdateContainerRequest{}
	case FuncStopContainer:
		req = &api.StopContainerRequest{}
	case FuncPostCreate:
		req, rsp, simple, name = &api.PostCreateContainerRequest{}, &api.PostCreateContainerResponse{}, h.PostCreateContainer, "PostCreateContainer"
	case FuncStartContainer:
		req, rsp, simple, name = &api.StartContainerRequest{}, &api.StartContainerResponse{}, h.StartContainer, "StartContainer"
	case FuncPostStart:
		req, rsp, simple, name = &api.PostStartContainerRequest{}, &api.PostStartContainerResponse{}, h.PostStartContainer, "PostStartContainer"
	case FuncPostUpdate:
		req, rsp, simple, name = &api.PostUpdateContainerRequest{}, &api.PostUpdateContainerResponse{}, h.PostUpdateContainer, "PostUpdateContainer"
	case FuncRemoveContainer:
		req, rsp, simple, name = &api.RemoveContainerRequest{}, &api.RemoveContainerResponse{}, h.RemoveContainer, "RemoveContainer"
	default:
		return nil, false, nil
	}
	if err := decode(fn, b, req); err != nil {
		return nil, true, err
	}
	pod, ctr := req.GetPod(), req.GetContainer()
	if rsp != nil {
		if err := handlers.IgnoreOptOut(g.containerEvent(ctx, name, simple, pod, ctr)); err != nil {
			return nil, true, err
		}
		return rsp, true, nil
	}
	admit := g.gate.admitContainer(pod, ctr)
	switch r := req.(type) {
	case *api.CreateContainerRequest:
		out := &api.CreateContainerResponse{}
		switch {
		case h.CreateContainer == nil:
		case !admit:
			out.OptOut = g.gate.optOut(pod, ctr)
		default:
			err = g.invoke("CreateContainer", func() error {
				var err error
				out.Adjust, out.Update, out.Evict, err = h.CreateContainer(ctx, pod, ctr)
				return err
			})
		}
		rsp = out
	case *api.UpdateContainerRequest:
		out := &api.UpdateContainerResponse{}
		if h.UpdateContainer != nil && admit {
			err = g.invoke("UpdateContainer", func() error {
				var err error
				out.Update, out.Evict, err = h.UpdateContainer(ctx, pod, ctr, r.GetLinuxResources())
				return err
			})
		}
		rsp = out
	case *api.StopContainerRequest:
		out := &api.StopContainerResponse{}
		if h.StopContainer != nil && admit {
			err = g.invoke("StopContainer", func() error {
				var err error
				out.Update, err = h.StopContainer(ctx, pod, ctr)
				return err
			})
		}
		rsp = out
	}
	if create, ok := rsp.(*api.CreateContainerResponse); ok {
		if out, isOptOut := handlers.OptOut(err, pod, ctr); isOptOut {
			create.OptOut = out
			return create, true, nil
		}
	}
	if err = handlers.IgnoreOptOut(err); err != nil {
		return nil, true, err
	}
	return rsp, true, nil
}

// stateChange serves StateChange, through which runtimes of NRI v0.9 and
// older deliver the events without a result (an opt-out sentinel is
// success: the answer has no room for an opt-out).
func (g *Guest) stateChange(ctx context.Context, evt *api.StateChangeEvent) error {
	return handlers.IgnoreOptOut(g.stateChangeEvent(ctx, evt))
}

// stateChangeEvent calls the handler of a StateChange's event.
func (g *Guest) stateChangeEvent(ctx context.Context, evt *api.StateChangeEvent) error {
	pod, ctr, h := evt.GetPod(), evt.GetContainer(), &g.h
	switch e := evt.GetEvent(); e {
	case api.Event_RUN_POD_SANDBOX:
		return g.podEvent(ctx, e.Name(), h.RunPod, pod)
	case api.Event_POST_UPDATE_POD_SANDBOX:
		return g.podEvent(ctx, e.Name(), h.PostUpdatePod, pod)
	case api.Event_STOP_POD_SANDBOX:
		return g.podEvent(ctx, e.Name(), h.StopPod, pod)
	case api.Event_REMOVE_POD_SANDBOX:
		return g.podEvent(ctx, e.Name(), h.RemovePod, pod)
	case api.Event_POST_CREATE_CONTAINER:
		return g.containerEvent(ctx, e.Name(), h.PostCreateContainer, pod, ctr)
	case api.Event_START_CONTAINER:
		return g.containerEvent(ctx, e.Name(), h.StartContainer, pod, ctr)
	case api.Event_POST_START_CONTAINER:
		return g.containerEvent(ctx, e.Name(), h.PostStartContainer, pod, ctr)
	case api.Event_POST_UPDATE_CONTAINER:
		return g.containerEvent(ctx, e.Name(), h.PostUpdateContainer, pod, ctr)
	case api.Event_REMOVE_CONTAINER:
		return g.containerEvent(ctx, e.Name(), h.RemoveContainer, pod, ctr)
	}
	return nil
}

// validate serves ValidateContainerAdjustment: a handler error rejects
// the adjustment with the error's message as the reason; a panic fails
// the request.
func (g *Guest) validate(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	h := g.h.Validate
	if h == nil || !g.gate.admitContainer(req.GetPod(), req.GetContainer()) {
		return &api.ValidateContainerAdjustmentResponse{}, nil
	}
	err := g.invoke("ValidateContainerAdjustment", func() error { return h(ctx, req) })
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
