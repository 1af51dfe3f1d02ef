// Package validator is upstream's plugins/default-validator on nrikit:
// the configuration of the default validator, which nrikit's adaptation
// runs as the builtin plugin 00-default-validator (see the adaptation
// package's WithDefaultValidator).
package validator

import (
	"context"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
)

// DefaultValidatorConfig is the default validator's configuration,
// nrikit's validator.Config: the same fields with the same TOML and YAML
// keys as upstream's.
type DefaultValidatorConfig = validator.Config

// RequiredPlugins is the pod annotation listing plugins that must
// process its containers' creation.
const RequiredPlugins = validator.RequiredPluginsAnnotation

// ErrValidation is wrapped by the errors rejecting an adjustment.
var ErrValidation = validator.ErrValidation

// DefaultValidator checks container adjustments against its
// configuration.
type DefaultValidator struct {
	v *validator.Validator
}

// NewDefaultValidator returns a validator for cfg (nil: everything
// allowed).
func NewDefaultValidator(cfg *DefaultValidatorConfig) *DefaultValidator {
	d := &DefaultValidator{}
	d.SetConfig(cfg)
	return d
}

// SetConfig replaces the validator's configuration (nil: everything
// allowed). It must not be called concurrently with
// ValidateContainerAdjustment.
func (d *DefaultValidator) SetConfig(cfg *DefaultValidatorConfig) {
	var c validator.Config
	if cfg != nil {
		c = *cfg
	}
	d.v = validator.New(c)
}

// ValidateContainerAdjustment returns an error describing why the
// adjustment in req is not allowed, or nil.
func (d *DefaultValidator) ValidateContainerAdjustment(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	return d.v.Validate(ctx, req)
}
