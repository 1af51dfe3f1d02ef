package core

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/handler"
	"github.com/nrikit/nrikit/stub/internal/handlers"
)

// Session serves the requests of one connection to the runtime (of one
// instance, in a WASM guest) with its plugin's handlers. Its methods are
// those of api.PluginService (which a WASM guest cannot name: package
// api declares it for the ttrpc transport only) and are safe for
// concurrent use.
type Session struct {
	p *Plugin
	// gate enforces the plugin's scope on this connection, if the
	// runtime does not (nil: it does, or there is none); set by
	// Configure.
	gate atomic.Pointer[gate]

	// The parts of a split Synchronize request collected so far (all
	// but the last have more set).
	syncMu   sync.Mutex
	syncPods []*api.PodSandbox
	syncCtrs []*api.Container
}

// NewSession returns a session serving p's handlers.
func (p *Plugin) NewSession() *Session { return &Session{p: p} }

// Plugin returns the plugin the session serves.
func (s *Session) Plugin() *Plugin { return s.p }

// PanicError is the error a recovered handler panic is turned into.
type PanicError struct {
	// Handler is the handler's name ("CreateContainer", "Configure", ...).
	Handler string
	// Value is what the handler panicked with.
	Value any
}

// Error implements the error interface.
func (e *PanicError) Error() string {
	return fmt.Sprintf("stub: %s handler panicked: %v", e.Handler, e.Value)
}

// invoke calls a handler named name: it recovers a panic into a
// *PanicError and tells Config.Observe of the call, with the runtime's
// timeout for it (its Synchronize timeout if sync is set).
func (s *Session) invoke(ctx context.Context, name string, sync bool, fn func(context.Context) error) (err error) {
	observe := s.p.cfg.Observe
	var start time.Time
	if observe != nil {
		start = time.Now()
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Handler: name, Value: v}
			s.p.log(LevelError, "plugin handler panicked", "handler", name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
		if observe != nil {
			timeout := s.p.RequestTimeout()
			if sync {
				timeout = s.p.syncTimeout()
			}
			observe(name, time.Since(start), timeout, err)
		}
	}()
	return fn(ctx)
}

// event is the path of every event request to the plugin's handler: the
// scope gate decides whether the plugin is to see the event about pod
// (and ctr, for a container event), and returns the opt-out sentinel to
// answer it with if not (see gate.admit); then fn, nil if the plugin has
// no handler for e, is invoked.
func (s *Session) event(ctx context.Context, e api.Event, pod *api.PodSandbox, ctr *api.Container, fn func(context.Context) error) error {
	if err := s.gate.Load().admit(e, pod, ctr); err != nil {
		s.p.log(LevelDebug, "event out of the plugin's scope: answered without calling the handler",
			"event", e.Name(), "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName())
		return err
	}
	if fn == nil {
		return nil
	}
	return s.invoke(ctx, e.Name(), false, fn)
}

// podEvent dispatches a pod event whose handler (nil: none) returns only
// an error, keeping opt-out sentinels.
func (s *Session) podEvent(ctx context.Context, e api.Event, h handlers.PodFunc, pod *api.PodSandbox) error {
	var fn func(context.Context) error
	if h != nil {
		fn = func(ctx context.Context) error { return h(ctx, pod) }
	}
	return s.event(ctx, e, pod, nil, fn)
}

// containerEvent dispatches a container event whose handler (nil: none)
// returns only an error, keeping opt-out sentinels.
func (s *Session) containerEvent(ctx context.Context, e api.Event, h handlers.ContainerFunc, pod *api.PodSandbox, ctr *api.Container) error {
	var fn func(context.Context) error
	if h != nil {
		fn = func(ctx context.Context) error { return h(ctx, pod, ctr) }
	}
	return s.event(ctx, e, pod, ctr, fn)
}

// Configure calls the plugin's Configure handler and answers with the
// resolved subscription (see the package documentation).
func (s *Session) Configure(ctx context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return s.p.configure(ctx, s, req)
}

// Synchronize collects the parts of a split request, answering all but
// the last with more set; with the last it calls the plugin's handler
// with the pods and containers in its scope.
func (s *Session) Synchronize(ctx context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	s.syncMu.Lock()
	s.syncPods = append(s.syncPods, req.GetPods()...)
	s.syncCtrs = append(s.syncCtrs, req.GetContainers()...)
	if req.GetMore() {
		s.syncMu.Unlock()
		return &api.SynchronizeResponse{More: true}, nil
	}
	pods, ctrs := s.syncPods, s.syncCtrs
	s.syncPods, s.syncCtrs = nil, nil
	s.syncMu.Unlock()

	pods, ctrs = s.gate.Load().seed(pods, ctrs)
	h := s.p.h.Synchronize
	if h == nil {
		return &api.SynchronizeResponse{}, nil
	}
	rsp := &api.SynchronizeResponse{}
	err := s.invoke(ctx, "Synchronize", true, func(ctx context.Context) error {
		var err error
		rsp.Update, rsp.OptOut, err = h(ctx, pods, ctrs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// DropSynchronize forgets the parts of a split Synchronize request
// collected so far: the request failed (a part could not be decoded), and
// a runtime that synchronizes again starts from its first part.
func (s *Session) DropSynchronize() {
	s.syncMu.Lock()
	s.syncPods, s.syncCtrs = nil, nil
	s.syncMu.Unlock()
}

// Shutdown calls the plugin's Shutdown handler.
func (s *Session) Shutdown(ctx context.Context, _ *api.Empty) (*api.Empty, error) {
	if h := s.p.h.Shutdown; h != nil {
		_ = s.invoke(ctx, "Shutdown", false, func(ctx context.Context) error { h(ctx); return nil })
	}
	return &api.Empty{}, nil
}

// RunPodSandbox calls the plugin's handler; an opt-out of the pod (the
// handler's, or the scope's) is the answer's.
func (s *Session) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	err := s.podEvent(ctx, api.Event_RUN_POD_SANDBOX, s.p.h.RunPod, req.GetPod())
	if errors.Is(err, handler.ErrNotInterestedInPod) {
		out, _ := handlers.OptOut(err, req.GetPod(), nil)
		return &api.RunPodSandboxResponse{OptOut: out}, nil
	}
	if err = handlers.IgnoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.RunPodSandboxResponse{}, nil
}

// UpdatePodSandbox calls the plugin's handler.
func (s *Session) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	var fn func(context.Context) error
	if h := s.p.h.UpdatePod; h != nil {
		fn = func(ctx context.Context) error {
			return h(ctx, req.GetPod(), req.GetOverheadLinuxResources(), req.GetLinuxResources())
		}
	}
	if err := handlers.IgnoreOptOut(s.event(ctx, api.Event_UPDATE_POD_SANDBOX, req.GetPod(), nil, fn)); err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox calls the plugin's handler.
func (s *Session) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	if err := handlers.IgnoreOptOut(s.podEvent(ctx, api.Event_POST_UPDATE_POD_SANDBOX, s.p.h.PostUpdatePod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.PostUpdatePodSandboxResponse{}, nil
}

// StopPodSandbox calls the plugin's handler.
func (s *Session) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	if err := handlers.IgnoreOptOut(s.podEvent(ctx, api.Event_STOP_POD_SANDBOX, s.p.h.StopPod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox calls the plugin's handler.
func (s *Session) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	if err := handlers.IgnoreOptOut(s.podEvent(ctx, api.Event_REMOVE_POD_SANDBOX, s.p.h.RemovePod, req.GetPod())); err != nil {
		return nil, err
	}
	return &api.RemovePodSandboxResponse{}, nil
}

// CreateContainer calls the plugin's handler; an opt-out (the handler's,
// or the scope's) is the answer's, with whatever the handler answered.
func (s *Session) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	rsp := &api.CreateContainerResponse{}
	var fn func(context.Context) error
	if h := s.p.h.CreateContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Adjust, rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer())
			return err
		}
	}
	err := s.event(ctx, api.Event_CREATE_CONTAINER, req.GetPod(), req.GetContainer(), fn)
	if out, ok := handlers.OptOut(err, req.GetPod(), req.GetContainer()); ok {
		rsp.OptOut = out
		return rsp, nil
	}
	if err != nil {
		return nil, err
	}
	return rsp, nil
}

// PostCreateContainer calls the plugin's handler.
func (s *Session) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	if err := handlers.IgnoreOptOut(s.containerEvent(ctx, api.Event_POST_CREATE_CONTAINER, s.p.h.PostCreateContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostCreateContainerResponse{}, nil
}

// StartContainer calls the plugin's handler.
func (s *Session) StartContainer(ctx context.Context, req *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	if err := handlers.IgnoreOptOut(s.containerEvent(ctx, api.Event_START_CONTAINER, s.p.h.StartContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.StartContainerResponse{}, nil
}

// PostStartContainer calls the plugin's handler.
func (s *Session) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	if err := handlers.IgnoreOptOut(s.containerEvent(ctx, api.Event_POST_START_CONTAINER, s.p.h.PostStartContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostStartContainerResponse{}, nil
}

// UpdateContainer calls the plugin's handler.
func (s *Session) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	rsp := &api.UpdateContainerResponse{}
	var fn func(context.Context) error
	if h := s.p.h.UpdateContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Update, rsp.Evict, err = h(ctx, req.GetPod(), req.GetContainer(), req.GetLinuxResources())
			return err
		}
	}
	if err := handlers.IgnoreOptOut(s.event(ctx, api.Event_UPDATE_CONTAINER, req.GetPod(), req.GetContainer(), fn)); err != nil {
		return nil, err
	}
	return rsp, nil
}

// PostUpdateContainer calls the plugin's handler.
func (s *Session) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	if err := handlers.IgnoreOptOut(s.containerEvent(ctx, api.Event_POST_UPDATE_CONTAINER, s.p.h.PostUpdateContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.PostUpdateContainerResponse{}, nil
}

// StopContainer calls the plugin's handler.
func (s *Session) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	rsp := &api.StopContainerResponse{}
	var fn func(context.Context) error
	if h := s.p.h.StopContainer; h != nil {
		fn = func(ctx context.Context) error {
			var err error
			rsp.Update, err = h(ctx, req.GetPod(), req.GetContainer())
			return err
		}
	}
	if err := handlers.IgnoreOptOut(s.event(ctx, api.Event_STOP_CONTAINER, req.GetPod(), req.GetContainer(), fn)); err != nil {
		return nil, err
	}
	return rsp, nil
}

// RemoveContainer calls the plugin's handler.
func (s *Session) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	if err := handlers.IgnoreOptOut(s.containerEvent(ctx, api.Event_REMOVE_CONTAINER, s.p.h.RemoveContainer, req.GetPod(), req.GetContainer())); err != nil {
		return nil, err
	}
	return &api.RemoveContainerResponse{}, nil
}

// StateChange delivers the events without a result through which
// runtimes of NRI v0.9 and older send them.
func (s *Session) StateChange(ctx context.Context, evt *api.StateChangeEvent) (*api.Empty, error) {
	pod, ctr, h := evt.GetPod(), evt.GetContainer(), &s.p.h
	var err error
	switch e := evt.GetEvent(); e {
	case api.Event_RUN_POD_SANDBOX:
		err = s.podEvent(ctx, e, h.RunPod, pod)
	case api.Event_POST_UPDATE_POD_SANDBOX:
		err = s.podEvent(ctx, e, h.PostUpdatePod, pod)
	case api.Event_STOP_POD_SANDBOX:
		err = s.podEvent(ctx, e, h.StopPod, pod)
	case api.Event_REMOVE_POD_SANDBOX:
		err = s.podEvent(ctx, e, h.RemovePod, pod)
	case api.Event_POST_CREATE_CONTAINER:
		err = s.containerEvent(ctx, e, h.PostCreateContainer, pod, ctr)
	case api.Event_START_CONTAINER:
		err = s.containerEvent(ctx, e, h.StartContainer, pod, ctr)
	case api.Event_POST_START_CONTAINER:
		err = s.containerEvent(ctx, e, h.PostStartContainer, pod, ctr)
	case api.Event_POST_UPDATE_CONTAINER:
		err = s.containerEvent(ctx, e, h.PostUpdateContainer, pod, ctr)
	case api.Event_REMOVE_CONTAINER:
		err = s.containerEvent(ctx, e, h.RemoveContainer, pod, ctr)
	default:
		s.p.log(LevelDebug, "ignoring StateChange for an event that has a dedicated request", "event", e.Name())
	}
	if err = handlers.IgnoreOptOut(err); err != nil {
		return nil, err
	}
	return &api.Empty{}, nil
}

// ValidateContainerAdjustment calls the plugin's validator: its error
// rejects the adjustment with the error's message as the reason (an
// opt-out sentinel accepts it); a panic fails the request.
func (s *Session) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	var fn func(context.Context) error
	if h := s.p.h.Validate; h != nil {
		fn = func(ctx context.Context) error { return h(ctx, req) }
	}
	err := handlers.IgnoreOptOut(s.event(ctx, api.Event_VALIDATE_CONTAINER_ADJUSTMENT, req.GetPod(), req.GetContainer(), fn))
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return nil, err
	case err != nil:
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return &api.ValidateContainerAdjustmentResponse{}, nil
}
