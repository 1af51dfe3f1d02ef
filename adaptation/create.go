package adaptation

import (
	"context"
	"errors"
	"slices"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
)

// CreateContainer relays the creation of a container to the plugins, in
// order, each seeing the container with the adjustments of the plugins
// before it, and merges their answers. Then the validating plugins check
// the merged result concurrently. It fails if a plugin fails (see the
// failure policy), if two plugins conflict (*merge.ConflictError), if a
// validator rejects the result (*ValidationError) or if a required plugin
// is missing (*RequiredPluginError).
func (a *Adaptation) CreateContainer(ctx context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	if req.GetContainer() == nil {
		return nil, errNoContainer
	}
	pristine := api.Clone(req.Container)
	c := merge.NewCreate(req.Pod, req.Container)
	var consulted []*api.PluginInstance
	err := mutate(ctx, a, rpcCreateContainer, req.GetPod().GetId(), req.Container.Id,
		a.checkRequired,
		func(*plugin) *api.CreateContainerRequest {
			return &api.CreateContainerRequest{Pod: req.Pod, Container: c.Container()}
		},
		func(p *plugin, rsp *api.CreateContainerResponse) error {
			consulted = append(consulted, &api.PluginInstance{Name: p.name, Index: p.idx})
			return c.Apply(p.full, rsp)
		})
	if err != nil {
		return nil, err
	}
	rsp := &api.CreateContainerResponse{Adjust: c.Adjustment(), Update: c.Updates(), Evict: c.Evictions()}
	for _, ign := range c.Ignored() {
		a.log.Info("dropped conflicting update marked IgnoreFailure", "container", pristine.GetName(), "error", ign)
	}
	vreq := &api.ValidateContainerAdjustmentRequest{
		Pod:       req.Pod,
		Container: pristine,
		Adjust:    rsp.Adjust,
		Update:    rsp.Update,
		Owners:    c.Owners(),
		Plugins:   consulted,
	}
	if err := a.validate(ctx, vreq); err != nil {
		return nil, err
	}
	return rsp, nil
}

// checkRequired refuses a creation while a required plugin is missing.
func (a *Adaptation) checkRequired() error { return a.missingRequiredLocked() }

// validate asks every validating plugin, concurrently, to accept the
// merged adjustment. A rejection, or any failure of a validator
// (validation fails closed), fails the creation.
func (a *Adaptation) validate(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	res, err := a.reserve(api.Event_VALIDATE_CONTAINER_ADJUSTMENT, req.GetPod().GetId(), req.GetContainer().GetId(), nil)
	if err != nil {
		return err
	}
	outs := make([]chan outcome[*api.ValidateContainerAdjustmentResponse], len(res.plugins))
	for i, p := range res.plugins {
		out := make(chan outcome[*api.ValidateContainerAdjustmentResponse], 1)
		outs[i] = out
		res.slots[i].fill <- func(skip error) {
			if skip != nil {
				out <- outcome[*api.ValidateContainerAdjustmentResponse]{err: skip}
				return
			}
			rsp, err := invoke(ctx, p, rpcValidate, req)
			out <- outcome[*api.ValidateContainerAdjustmentResponse]{rsp, err}
		}
	}
	var first error
	for i, p := range res.plugins {
		var o outcome[*api.ValidateContainerAdjustmentResponse]
		select {
		case o = <-outs[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		var verr error
		switch {
		case errors.Is(o.err, errPluginGone):
			// Disconnected before it was asked, as if it had not been
			// there (unless it is required).
			if p.required {
				verr = &RequiredPluginError{Plugin: p.full}
			}
		case o.err != nil:
			verr = o.err // a *PluginError naming the validator, or ctx's error
		case o.rsp.GetReject():
			reason := o.rsp.GetReason()
			if reason == "" {
				reason = "no reason given"
			}
			verr = &ValidationError{Validator: p.full, Container: req.GetContainer().GetName(), Reason: reason}
		}
		if verr != nil && first == nil {
			first = verr
		}
	}
	return first
}

// UpdateContainer relays a container's resource update to the plugins, in
// order, each seeing the resources as changed by the plugins before it,
// and merges their answers.
func (a *Adaptation) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	if req.GetContainer() == nil {
		return nil, errNoContainer
	}
	u := merge.NewUpdate(req.Pod, req.Container, req.LinuxResources)
	err := mutate(ctx, a, rpcUpdateContainer, req.GetPod().GetId(), req.Container.Id, nil,
		func(*plugin) *api.UpdateContainerRequest {
			return &api.UpdateContainerRequest{Pod: req.Pod, Container: req.Container, LinuxResources: u.Resources()}
		},
		func(p *plugin, rsp *api.UpdateContainerResponse) error { return u.Apply(p.full, rsp) })
	if err != nil {
		return nil, err
	}
	// The merged resources of the container itself come last, as
	// upstream reports them.
	updates := append(slices.Clip(u.Updates()), &api.ContainerUpdate{
		ContainerId: req.Container.Id,
		Linux:       &api.LinuxContainerUpdate{Resources: u.Resources()},
	})
	return &api.UpdateContainerResponse{Update: updates, Evict: u.Evictions()}, nil
}

// StopContainer relays the stop of a container to the plugins, in order,
// and merges the updates to other containers they ask for.
func (a *Adaptation) StopContainer(ctx context.Context, req *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	if req.GetContainer() == nil {
		return nil, errNoContainer
	}
	u := merge.NewUpdates()
	err := mutate(ctx, a, rpcStopContainer, req.GetPod().GetId(), req.Container.Id, nil, same(req),
		func(p *plugin, rsp *api.StopContainerResponse) error { return u.Apply(p.full, rsp.GetUpdate()) })
	if err != nil {
		return nil, err
	}
	return &api.StopContainerResponse{Update: u.List()}, nil
}
