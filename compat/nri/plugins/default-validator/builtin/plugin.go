// Package builtin is upstream's plugins/default-validator/builtin on
// nrikit: the default validator as a builtin plugin, for
// adaptation.WithBuiltinPlugins. A runtime usually enables it with
// adaptation.WithDefaultValidator instead.
package builtin

import (
	"context"

	"github.com/containerd/nri/pkg/adaptation/builtin"
	"github.com/containerd/nri/pkg/log"
	validator "github.com/containerd/nri/plugins/default-validator"
)

// DefaultValidatorConfig is the default validator's configuration.
type DefaultValidatorConfig = validator.DefaultValidatorConfig

// GetDefaultValidator returns the default validator configured by cfg as
// the builtin plugin 00-default-validator, or nil (logged) if cfg does not
// enable it.
func GetDefaultValidator(cfg *DefaultValidatorConfig) *builtin.BuiltinPlugin {
	if cfg == nil || !cfg.Enable {
		log.Infof(context.Background(), "built-in NRI default validator is disabled")
		return nil
	}
	v := validator.NewDefaultValidator(cfg)
	return &builtin.BuiltinPlugin{
		Base:     "default-validator",
		Index:    "00",
		Handlers: builtin.BuiltinHandlers{ValidateContainerAdjustment: v.ValidateContainerAdjustment},
	}
}
