package adaptation

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/proto"
)

// The runtime calls one method per lifecycle event. Mutating events go to
// the subscribed plugins one after the other and may fail; notifications
// go to all of them concurrently and never fail. Every method is a thin
// front of mutate or notify (dispatch.go).

// errNoPod and errNoContainer reject requests that lack their object.
var (
	errNoPod       = errors.New("adaptation: request without pod")
	errNoContainer = errors.New("adaptation: request without container")
)

// same sends req to every plugin (the endpoints encode it once, see
// shared).
func same[Req proto.Message](req Req) func(*plugin) Req {
	return func(*plugin) Req { return req }
}

func ignore[Rsp any](*plugin, Rsp) error { return nil }

// RunPodSandbox relays the start of a pod to the plugins, in order; the
// first failing plugin fails it. A plugin the policy or the pod's
// required-plugins annotation requires (required.go) that is not
// registered, or fails, fails it with a *RequiredPluginError naming it.
func (a *Adaptation) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) error {
	if req.GetPod() == nil {
		return errNoPod
	}
	subj := about(req.Pod, nil)
	need, err := a.requiredFor(subj)
	if err != nil {
		return err
	}
	hooks := reserveHooks{required: need}
	if need != nil {
		hooks.check = func() error { return a.missingLocked(need) }
	}
	return mutate(ctx, a, rpcRunPodSandbox, subj, hooks, same(req), ignore)
}

// UpdatePodSandbox relays a pod's resource update to the plugins, in
// order.
func (a *Adaptation) UpdatePodSandbox(ctx context.Context, req *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	if req.GetPod() == nil {
		return nil, errNoPod
	}
	if err := mutate(ctx, a, rpcUpdatePodSandbox, about(req.Pod, nil), reserveHooks{}, same(req), ignore); err != nil {
		return nil, err
	}
	return &api.UpdatePodSandboxResponse{}, nil
}

// PostUpdatePodSandbox notifies the plugins that a pod's resources were
// updated.
func (a *Adaptation) PostUpdatePodSandbox(ctx context.Context, req *api.PostUpdatePodSandboxRequest) error {
	return notify(ctx, a, rpcPostUpdatePodSandbox, about(req.GetPod(), nil), req)
}

// StopPodSandbox notifies the plugins that a pod is stopping.
func (a *Adaptation) StopPodSandbox(ctx context.Context, req *api.StopPodSandboxRequest) error {
	return notify(ctx, a, rpcStopPodSandbox, about(req.GetPod(), nil), req)
}

// RemovePodSandbox notifies the plugins that a pod was removed.
func (a *Adaptation) RemovePodSandbox(ctx context.Context, req *api.RemovePodSandboxRequest) error {
	return notify(ctx, a, rpcRemovePodSandbox, about(req.GetPod(), nil), req)
}

// PostCreateContainer notifies the plugins that a container was created.
func (a *Adaptation) PostCreateContainer(ctx context.Context, req *api.PostCreateContainerRequest) error {
	return notify(ctx, a, rpcPostCreateContainer, about(req.GetPod(), req.GetContainer()), req)
}

// StartContainer relays the start of a container to the plugins, in
// order; the first failing plugin fails it.
func (a *Adaptation) StartContainer(ctx context.Context, req *api.StartContainerRequest) error {
	if req.GetContainer() == nil {
		return errNoContainer
	}
	err := mutate(ctx, a, rpcStartContainer, about(req.GetPod(), req.Container), reserveHooks{}, same(req), ignore)
	return err
}

// PostStartContainer notifies the plugins that a container was started.
func (a *Adaptation) PostStartContainer(ctx context.Context, req *api.PostStartContainerRequest) error {
	return notify(ctx, a, rpcPostStartContainer, about(req.GetPod(), req.GetContainer()), req)
}

// PostUpdateContainer notifies the plugins that a container's resources
// were updated.
func (a *Adaptation) PostUpdateContainer(ctx context.Context, req *api.PostUpdateContainerRequest) error {
	return notify(ctx, a, rpcPostUpdateContainer, about(req.GetPod(), req.GetContainer()), req)
}

// RemoveContainer notifies the plugins that a container was removed.
func (a *Adaptation) RemoveContainer(ctx context.Context, req *api.RemoveContainerRequest) error {
	return notify(ctx, a, rpcRemoveContainer, about(req.GetPod(), req.GetContainer()), req)
}
