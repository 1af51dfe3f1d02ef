package validator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nrikit/nrikit/api"
)

func (v *Validator) validateOCIHooks(req *api.ValidateContainerAdjustmentRequest) error {
	if !v.cfg.RejectOCIHookAdjustment || req.Adjust == nil {
		return nil
	}
	owners, claimed := req.Owners.HooksOwner(req.GetContainer().GetId())
	if !claimed {
		return nil
	}
	offender := fmt.Sprintf("plugin %q", owners)
	if strings.Contains(owners, ",") {
		offender = fmt.Sprintf("plugins %q", owners)
	}
	return fmt.Errorf("%w: %s attempted restricted OCI hook injection", ErrValidation, offender)
}

func (v *Validator) validateSeccompPolicy(req *api.ValidateContainerAdjustmentRequest) error {
	if req.Adjust == nil {
		return nil
	}
	owner, claimed := req.Owners.SeccompPolicyOwner(req.GetContainer().GetId())
	if !claimed {
		return nil
	}
	owner = api.ClearRemovalMarker(owner)
	profile := req.GetContainer().GetLinux().GetSeccompProfile()
	var kind string
	switch {
	case profile == nil || profile.GetProfileType() == api.SecurityProfile_UNCONFINED:
		if v.cfg.RejectUnconfinedSeccompAdjustment {
			kind = "unconfined"
		}
	case profile.GetProfileType() == api.SecurityProfile_RUNTIME_DEFAULT:
		if v.cfg.RejectRuntimeDefaultSeccompAdjustment {
			kind = "runtime default"
		}
	case profile.GetProfileType() == api.SecurityProfile_LOCALHOST:
		if v.cfg.RejectCustomSeccompAdjustment {
			kind = "custom"
		}
	}
	if kind == "" {
		return nil
	}
	return fmt.Errorf("%w: plugin %q attempted restricted %s seccomp policy adjustment", ErrValidation, owner, kind)
}

func (v *Validator) validateNamespaces(req *api.ValidateContainerAdjustmentRequest) error {
	if !v.cfg.RejectNamespaceAdjustment || req.Adjust == nil {
		return nil
	}
	owners, claimed := req.Owners.NamespaceOwners(req.GetContainer().GetId())
	if !claimed || len(owners) == 0 {
		return nil
	}
	offenders := make([]string, 0, len(owners))
	for _, ns := range sortedKeys(owners) {
		offenders = append(offenders, fmt.Sprintf("%q (namespace %q)", api.ClearRemovalMarker(owners[ns]), ns))
	}
	return fmt.Errorf("%w: attempted restricted namespace adjustment by plugin(s) %s",
		ErrValidation, strings.Join(offenders, ", "))
}

func (v *Validator) validateSysctl(req *api.ValidateContainerAdjustmentRequest) error {
	if !v.cfg.RejectSysctlAdjustment {
		return nil
	}
	sysctl := req.GetAdjust().GetLinux().GetSysctl()
	var offenders []string
	for _, key := range sortedKeys(sysctl) {
		owner, claimed := req.Owners.SysctlOwner(req.GetContainer().GetId(), key)
		if !claimed {
			continue
		}
		offenders = append(offenders, fmt.Sprintf("%q (sysctl %q)", api.ClearRemovalMarker(owner), key))
	}
	if len(offenders) == 0 {
		return nil
	}
	return fmt.Errorf("%w: attempted restricted sysctl adjustment by plugin(s) %s",
		ErrValidation, strings.Join(offenders, ", "))
}

func (v *Validator) validateRequiredPlugins(req *api.ValidateContainerAdjustmentRequest) error {
	container := req.GetContainer().GetName()
	if key := v.cfg.TolerateMissingAnnotation; key != "" {
		if value, ok := api.EffectiveAnnotation(req.GetPod(), key, container); ok {
			tolerate, err := strconv.ParseBool(value)
			if err != nil {
				return fmt.Errorf("%w: invalid %s annotation %q: %w", ErrValidation, key, value, err)
			}
			if tolerate {
				return nil
			}
		}
	}

	required := slices.Clone(v.cfg.RequiredPlugins)
	if value, ok := api.EffectiveAnnotation(req.GetPod(), RequiredPluginsAnnotation, container); ok {
		annotated, err := parseList(value)
		if err != nil {
			return fmt.Errorf("%w: invalid %s annotation %q: %w", ErrValidation, RequiredPluginsAnnotation, value, err)
		}
		required = append(required, annotated...)
	}
	if len(required) == 0 {
		return nil
	}

	present := make(map[string]bool, 2*len(req.Plugins))
	for _, p := range req.Plugins {
		present[p.GetName()] = true
		present[api.FullPluginName(p.GetIndex(), p.GetName())] = true
	}
	var missing []string
	for _, r := range required {
		if !present[r] {
			missing = append(missing, r)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: required plugin %q not present", ErrValidation, missing[0])
	default:
		return fmt.Errorf("%w: required plugins %q not present", ErrValidation, strings.Join(missing, ","))
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
