package adaptation

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WithDefaultValidator installs the default validator configured by cfg
// as the builtin plugin "00-default-validator" (upstream's identity),
// subscribed to ValidateContainerAdjustment only. A disabled
// configuration (cfg.Enable false) installs nothing.
func WithDefaultValidator(cfg validator.Config) Option {
	return func(c *config) error {
		if !cfg.Enable {
			return nil
		}
		return WithBuiltinPlugin(DefaultValidatorIndex, DefaultValidatorName,
			&defaultValidator{v: validator.New(cfg)})(c)
	}
}

// defaultValidator serves the default validator as a builtin plugin. It
// is only ever sent the requests below: it subscribes to validation only.
type defaultValidator struct {
	unimplementedPlugin
	v *validator.Validator
}

func (d *defaultValidator) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.Event_VALIDATE_CONTAINER_ADJUSTMENT.Mask())}, nil
}

func (d *defaultValidator) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.GetMore()}, nil
}

func (d *defaultValidator) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (d *defaultValidator) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	err := d.v.Validate(ctx, req)
	switch {
	case err == nil:
		return &api.ValidateContainerAdjustmentResponse{}, nil
	case errors.Is(err, validator.ErrValidation):
		return &api.ValidateContainerAdjustmentResponse{Reject: true, Reason: err.Error()}, nil
	}
	return nil, err
}

// unimplementedPlugin answers every request with codes.Unimplemented; a
// builtin plugin embeds it and overrides what it handles.
type unimplementedPlugin struct{}

func unimplemented(method string) error {
	return status.Errorf(codes.Unimplemented, "builtin plugin does not implement %s", method)
}

func (unimplementedPlugin) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return nil, unimplemented("Configure")
}
func (unimplementedPlugin) Synchronize(context.Context, *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return nil, unimplemented("Synchronize")
}
func (unimplementedPlugin) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return nil, unimplemented("Shutdown")
}
func (unimplementedPlugin) RunPodSandbox(context.Context, *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	return nil, unimplemented("RunPodSandbox")
}
func (unimplementedPlugin) UpdatePodSandbox(context.Context, *api.UpdatePodSandboxRequest) (*api.UpdatePodSandboxResponse, error) {
	return nil, unimplemented("UpdatePodSandbox")
}
func (unimplementedPlugin) PostUpdatePodSandbox(context.Context, *api.PostUpdatePodSandboxRequest) (*api.PostUpdatePodSandboxResponse, error) {
	return nil, unimplemented("PostUpdatePodSandbox")
}
func (unimplementedPlugin) StopPodSandbox(context.Context, *api.StopPodSandboxRequest) (*api.StopPodSandboxResponse, error) {
	return nil, unimplemented("StopPodSandbox")
}
func (unimplementedPlugin) RemovePodSandbox(context.Context, *api.RemovePodSandboxRequest) (*api.RemovePodSandboxResponse, error) {
	return nil, unimplemented("RemovePodSandbox")
}
func (unimplementedPlugin) CreateContainer(context.Context, *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	return nil, unimplemented("CreateContainer")
}
func (unimplementedPlugin) PostCreateContainer(context.Context, *api.PostCreateContainerRequest) (*api.PostCreateContainerResponse, error) {
	return nil, unimplemented("PostCreateContainer")
}
func (unimplementedPlugin) StartContainer(context.Context, *api.StartContainerRequest) (*api.StartContainerResponse, error) {
	return nil, unimplemented("StartContainer")
}
func (unimplementedPlugin) PostStartContainer(context.Context, *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	return nil, unimplemented("PostStartContainer")
}
func (unimplementedPlugin) UpdateContainer(context.Context, *api.UpdateContainerRequest) (*api.UpdateContainerResponse, error) {
	return nil, unimplemented("UpdateContainer")
}
func (unimplementedPlugin) PostUpdateContainer(context.Context, *api.PostUpdateContainerRequest) (*api.PostUpdateContainerResponse, error) {
	return nil, unimplemented("PostUpdateContainer")
}
func (unimplementedPlugin) StopContainer(context.Context, *api.StopContainerRequest) (*api.StopContainerResponse, error) {
	return nil, unimplemented("StopContainer")
}
func (unimplementedPlugin) RemoveContainer(context.Context, *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	return nil, unimplemented("RemoveContainer")
}
func (unimplementedPlugin) StateChange(context.Context, *api.StateChangeEvent) (*api.Empty, error) {
	return nil, unimplemented("StateChange")
}
func (unimplementedPlugin) ValidateContainerAdjustment(context.Context, *api.ValidateContainerAdjustmentRequest) (*api.ValidateContainerAdjustmentResponse, error) {
	return nil, unimplemented("ValidateContainerAdjustment")
}
