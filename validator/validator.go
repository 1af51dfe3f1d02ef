// Package validator is NRI's default validator: it lets a runtime reject
// container adjustments that touch fields an administrator has locked
// down (OCI hooks, seccomp policies, namespaces, sysctls) and creations
// that were not seen by required plugins. Its rules and configuration are
// those of containerd/nri's default validator.
package validator

import (
	"context"
	"errors"

	"github.com/nrikit/nrikit/api"
)

// ErrValidation is wrapped by every rejection.
var ErrValidation = errors.New("validation error")

// Config configures the default validator. The field tags are upstream's
// configuration keys.
type Config struct {
	// Enable turns validation on; a disabled validator accepts everything.
	Enable bool `json:"enable" yaml:"enable" toml:"enable"`
	// RejectOCIHookAdjustment rejects adjustments that inject OCI hooks.
	RejectOCIHookAdjustment bool `json:"rejectOCIHookAdjustment" yaml:"rejectOCIHookAdjustment" toml:"reject_oci_hook_adjustment"`
	// RejectRuntimeDefaultSeccompAdjustment rejects changing the seccomp
	// policy of a container that uses the runtime's default profile.
	RejectRuntimeDefaultSeccompAdjustment bool `json:"rejectRuntimeDefaultSeccompAdjustment" yaml:"rejectRuntimeDefaultSeccompAdjustment" toml:"reject_runtime_default_seccomp_adjustment"`
	// RejectUnconfinedSeccompAdjustment rejects changing the seccomp
	// policy of an unconfined container (or one without a profile).
	RejectUnconfinedSeccompAdjustment bool `json:"rejectUnconfinedSeccompAdjustment" yaml:"rejectUnconfinedSeccompAdjustment" toml:"reject_unconfined_seccomp_adjustment"`
	// RejectCustomSeccompAdjustment rejects changing the seccomp policy of
	// a container that uses a custom (localhost) profile.
	RejectCustomSeccompAdjustment bool `json:"rejectCustomSeccompAdjustment" yaml:"rejectCustomSeccompAdjustment" toml:"reject_custom_seccomp_adjustment"`
	// RejectNamespaceAdjustment rejects any change to Linux namespaces.
	RejectNamespaceAdjustment bool `json:"rejectNamespaceAdjustment" yaml:"rejectNamespaceAdjustment" toml:"reject_namespace_adjustment"`
	// RejectSysctlAdjustment rejects any sysctl adjustment.
	RejectSysctlAdjustment bool `json:"rejectSysctlAdjustment" yaml:"rejectSysctlAdjustment" toml:"reject_sysctl_adjustment"`
	// RequiredPlugins lists plugins (by name or "IDX-NAME") that must have
	// seen every container creation. This applies to all containers,
	// static pods included, unless they tolerate missing plugins.
	RequiredPlugins []string `json:"requiredPlugins" yaml:"requiredPlugins" toml:"required_plugins"`
	// TolerateMissingAnnotation, if set, is a pod annotation key (subject
	// to EffectiveAnnotation's scoping) that, set to a true value, lets a
	// container be created without the required plugins.
	TolerateMissingAnnotation string `json:"tolerateMissingPluginsAnnotation" yaml:"tolerateMissingPluginsAnnotation" toml:"tolerate_missing_plugins_annotation"`
}

// Validator validates merged container adjustments against a Config.
type Validator struct {
	cfg Config
}

// New returns a validator applying cfg (copied).
func New(cfg Config) *Validator {
	cfg.RequiredPlugins = append([]string(nil), cfg.RequiredPlugins...)
	return &Validator{cfg: cfg}
}

// rule is one validation check.
type rule func(v *Validator, req *api.ValidateContainerAdjustmentRequest) error

// rules in upstream's order: the first rejection is reported.
var rules = []rule{
	(*Validator).validateOCIHooks,
	(*Validator).validateSeccompPolicy,
	(*Validator).validateNamespaces,
	(*Validator).validateRequiredPlugins,
	(*Validator).validateSysctl,
}

// Validate checks the merged adjustment in req. It returns nil to accept
// it, or an error wrapping ErrValidation whose text is the reason,
// naming the offending plugins and fields.
func (v *Validator) Validate(ctx context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	if !v.cfg.Enable || req == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range rules {
		if err := r(v, req); err != nil {
			return err
		}
	}
	return nil
}
