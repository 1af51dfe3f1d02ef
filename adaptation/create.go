package adaptation

import (
	"context"
	"fmt"
	"slices"

	"github.com/nrikit/nrikit/adaptation/internal/wire"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
	"google.golang.org/protobuf/proto"
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
	// merge.NewCreate never writes req.Container (its view copies what a
	// plugin changes), so req.Container stays as the runtime sent it: that
	// is what validators see (passed like req.Pod, without a deep copy).
	pristine := req.Container
	c := merge.NewCreate(req.Pod, req.Container)
	subj := about(req.Pod, req.Container)
	var (
		// consulted are the plugins that answered, excluded those not
		// called because the container is outside their scope or they
		// opted out of it: the validators are told about both.
		consulted, excluded []*plugin
		// adjuster is the last plugin whose answer changed something:
		// the one to blame if the merged request grows too large.
		adjuster *plugin
	)
	need, err := a.requiredFor(subj)
	if err != nil {
		return nil, err
	}
	hooks := reserveHooks{
		required: need,
		check: func() error {
			if err := a.missingLocked(need); err != nil {
				return err
			}
			return a.missingRequiredLocked(subj)
		},
		skipped: func(p *plugin) {
			if excluded == nil {
				excluded = make([]*plugin, 0, len(a.plugins)) // under a.mu
			}
			excluded = append(excluded, p)
		},
	}
	err = mutate(ctx, a, rpcCreateContainer, subj, hooks,
		func(*plugin) *api.CreateContainerRequest {
			// The endpoints encode the pod, the same for every plugin,
			// once (see wire.Shared); a builtin plugin gets a clone.
			return &api.CreateContainerRequest{Pod: req.Pod, Container: c.Container()}
		},
		func(p *plugin, rsp *api.CreateContainerResponse) error {
			consulted = append(consulted, p)
			if hasOptOut(rsp.GetOptOut()) {
				if proto.Size(rsp.GetAdjust()) > 0 || len(rsp.GetUpdate()) > 0 || len(rsp.GetEvict()) > 0 {
					a.log.Warn("plugin opted out and asked for changes; an opt-out answer carries no changes, ignoring them",
						"plugin", p.full, "container", pristine.GetName())
				}
				return nil
			}
			if rsp.GetAdjust() != nil || len(rsp.GetUpdate()) > 0 || len(rsp.GetEvict()) > 0 {
				adjuster = p // an answer that changes something
			}
			return c.Apply(p.full, rsp)
		})
	if err != nil {
		if n, ok := wire.RequestSize(err); ok {
			// The merged request outgrew NRI's message limit.
			return nil, mergedSizeError(adjuster, "CreateContainer", pristine, n)
		}
		return nil, err
	}
	rsp := &api.CreateContainerResponse{Adjust: c.Adjustment(), Update: c.Updates(), Evict: c.Evictions()}
	for _, ign := range c.Ignored() {
		a.log.Info("dropped conflicting update marked IgnoreFailure", "container", pristine.GetName(), "error", ign)
	}
	vreq := func() *api.ValidateContainerAdjustmentRequest {
		return &api.ValidateContainerAdjustmentRequest{
			Pod:       req.Pod,
			Container: pristine,
			Adjust:    rsp.Adjust,
			Update:    rsp.Update,
			Owners:    c.Owners(),
			Plugins:   accountedFor(consulted, excluded),
		}
	}
	checkSize := func(v *api.ValidateContainerAdjustmentRequest) error {
		return mergedSizeError(adjuster, "CreateContainer", pristine, proto.Size(v))
	}
	if err := a.validate(ctx, subj, vreq, checkSize); err != nil {
		return nil, err
	}
	return rsp, nil
}

// maxRequestPayload is the largest encoded request the runtime sends: the
// ttrpc message limit less room for ttrpc's envelope (service and method
// names, timeout, metadata).
const maxRequestPayload = MaxMessageSize - 16<<10

// newShared returns what the requests of one event to its plugins share
// (see wire.Shared), a CreateContainerRequest refused above
// maxRequestPayload.
func newShared() *wire.Shared { return wire.NewShared(maxRequestPayload) }

// mergedSizeError fails a request whose encoding, size bytes, carrying
// the merged result of the plugins so far, is too large to send: it
// blames adjuster, whose answer made it so (the answers before it fitted,
// and every later plugin would fail the same way), or, if no plugin
// changed anything, the runtime's own container.
func mergedSizeError(adjuster *plugin, op string, ctr *api.Container, size int) error {
	if size <= maxRequestPayload {
		return nil
	}
	if adjuster == nil {
		return fmt.Errorf("adaptation: container %q: the request is %d bytes, above NRI's message limit of %d",
			ctr.GetName(), size, maxRequestPayload)
	}
	return adjuster.fail(&PluginError{Plugin: adjuster.full, Op: op, Kind: FailureOversize,
		Err: &AnswerSizeError{Size: size, Limit: maxRequestPayload, Merged: true}})
}

// accountedFor lists, in invocation order, the plugins a validator is
// told about (ValidateContainerAdjustmentRequest.plugins): those that
// answered CreateContainer and those that were not asked because the
// container is outside their scope or they opted out of it. Either way
// the plugin had its say, so a required-plugins rule counts it present.
func accountedFor(consulted, excluded []*plugin) []*api.PluginInstance {
	all := append(slices.Clip(consulted), excluded...)
	slices.SortStableFunc(all, comparePlugins)
	out := make([]*api.PluginInstance, len(all))
	for i, p := range all {
		out[i] = &api.PluginInstance{Name: p.name, Index: p.idx}
	}
	return out
}

// validate asks every validating plugin for which the container s is in
// scope, concurrently, to accept the merged adjustment (the request is
// built only if there is one, and checked by check). A rejection, or any
// failure of a validator (validation fails closed), fails the creation.
// With no validator, the request is built only for observers
// (observeonly.go), and not checked: they are told, not asked.
func (a *Adaptation) validate(ctx context.Context, s subject, build func() *api.ValidateContainerAdjustmentRequest,
	check func(*api.ValidateContainerAdjustmentRequest) error) error {
	res, err := a.reserve(rpcValidate.event, s, reserveHooks{}, false)
	if err != nil {
		return err
	}
	if len(res.plugins) == 0 {
		if res.observed() {
			deliverObservers(ctx, a, rpcValidate, s, res, build(), newShared())
		}
		return nil
	}
	req := build()
	if err := check(req); err != nil {
		res.release(0)
		return err
	}
	return gather(ctx, a, rpcValidate, s, res, req, true, func(p *plugin, rsp *api.ValidateContainerAdjustmentResponse) error {
		if !rsp.GetReject() {
			return nil
		}
		reason := rsp.GetReason()
		if reason == "" {
			reason = "no reason given"
		}
		return &ValidationError{Validator: p.full, Container: req.GetContainer().GetName(), Reason: reason}
	})
}

// UpdateContainer relays a container's resource update to the plugins, in
// order, each seeing the resources as changed by the plugins before it,
// and merges their answers.
func (a *Adaptation) UpdateContainer(ctx context.Context, req *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	if req.GetContainer() == nil {
		return nil, errNoContainer
	}
	u := merge.NewUpdate(req.Pod, req.Container, req.LinuxResources)
	err := mutate(ctx, a, rpcUpdateContainer, about(req.Pod, req.Container), reserveHooks{},
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
	err := mutate(ctx, a, rpcStopContainer, about(req.GetPod(), req.Container), reserveHooks{}, same(req),
		func(p *plugin, rsp *api.StopContainerResponse) error { return u.Apply(p.full, rsp.GetUpdate()) })
	if err != nil {
		return nil, err
	}
	return &api.StopContainerResponse{Update: u.List()}, nil
}
