package adaptation

import "context"

// The event methods relay the runtime's lifecycle events to the plugins;
// see nrikit's adaptation package for their semantics.

// RunPodSandbox relays a pod's creation.
func (r *Adaptation) RunPodSandbox(ctx context.Context, req *RunPodSandboxRequest) error {
	return r.a.RunPodSandbox(ctx, req)
}

// UpdatePodSandbox relays a pod's update.
func (r *Adaptation) UpdatePodSandbox(ctx context.Context, req *UpdatePodSandboxRequest) (*UpdatePodSandboxResponse, error) {
	return r.a.UpdatePodSandbox(ctx, req)
}

// PostUpdatePodSandbox relays a pod's completed update.
func (r *Adaptation) PostUpdatePodSandbox(ctx context.Context, req *PostUpdatePodSandboxRequest) error {
	return r.a.PostUpdatePodSandbox(ctx, req)
}

// StopPodSandbox relays a pod's stop.
func (r *Adaptation) StopPodSandbox(ctx context.Context, req *StopPodSandboxRequest) error {
	return r.a.StopPodSandbox(ctx, req)
}

// RemovePodSandbox relays a pod's removal.
func (r *Adaptation) RemovePodSandbox(ctx context.Context, req *RemovePodSandboxRequest) error {
	return r.a.RemovePodSandbox(ctx, req)
}

// CreateContainer relays a container's creation and returns the merged
// adjustment, updates and evictions.
func (r *Adaptation) CreateContainer(ctx context.Context, req *CreateContainerRequest) (*CreateContainerResponse, error) {
	return r.a.CreateContainer(ctx, req)
}

// PostCreateContainer relays a container's completed creation.
func (r *Adaptation) PostCreateContainer(ctx context.Context, req *PostCreateContainerRequest) error {
	return r.a.PostCreateContainer(ctx, req)
}

// StartContainer relays a container's start.
func (r *Adaptation) StartContainer(ctx context.Context, req *StartContainerRequest) error {
	return r.a.StartContainer(ctx, req)
}

// PostStartContainer relays a container's completed start.
func (r *Adaptation) PostStartContainer(ctx context.Context, req *PostStartContainerRequest) error {
	return r.a.PostStartContainer(ctx, req)
}

// UpdateContainer relays a container's update and returns the merged
// updates and evictions.
func (r *Adaptation) UpdateContainer(ctx context.Context, req *UpdateContainerRequest) (*UpdateContainerResponse, error) {
	return r.a.UpdateContainer(ctx, req)
}

// PostUpdateContainer relays a container's completed update.
func (r *Adaptation) PostUpdateContainer(ctx context.Context, req *PostUpdateContainerRequest) error {
	return r.a.PostUpdateContainer(ctx, req)
}

// StopContainer relays a container's stop and returns the updates
// plugins ask for.
func (r *Adaptation) StopContainer(ctx context.Context, req *StopContainerRequest) (*StopContainerResponse, error) {
	return r.a.StopContainer(ctx, req)
}

// RemoveContainer relays a container's removal.
func (r *Adaptation) RemoveContainer(ctx context.Context, req *RemoveContainerRequest) error {
	return r.a.RemoveContainer(ctx, req)
}
