package adaptation

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
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
// builtin plugin embeds it and overrides what it handles. It is the
// generated [api.UnimplementedPluginService], so that a new event needs no
// method here.
type unimplementedPlugin struct{ api.UnimplementedPluginService }
