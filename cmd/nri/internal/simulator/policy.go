package simulator

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/cmd/nri/internal/scenario"
)

// Identity of the simulator's validating plugin.
const (
	PolicyPluginIndex = "90"
	PolicyPluginName  = "policy"
)

// policy is the simulator's validating plugin: it rejects the kinds of
// change the scenario's policy rules deny, naming the plugins that made
// them (from the ownership records the runtime sends validators).
type policy struct {
	rules []*scenario.PolicyRule
}

// denied maps a kind of change to the fields it covers: simple fields
// have one owner, compound ones an owner per entry.
func denied(kind string) (simple, compound []api.Field) {
	switch kind {
	case scenario.DenyHooks:
		return []api.Field{api.Field_OciHooks}, nil
	case scenario.DenyDevices:
		return nil, []api.Field{api.Field_Devices}
	case scenario.DenyCDIDevices:
		return nil, []api.Field{api.Field_CdiDevices}
	case scenario.DenyMounts:
		return nil, []api.Field{api.Field_Mounts}
	case scenario.DenyEnv:
		return nil, []api.Field{api.Field_Env}
	case scenario.DenyArgs:
		return []api.Field{api.Field_Args}, nil
	case scenario.DenyRlimits:
		return nil, []api.Field{api.Field_Rlimits}
	case scenario.DenyAnnotations:
		return nil, []api.Field{api.Field_Annotations}
	case scenario.DenyNamespaces:
		return nil, []api.Field{api.Field_Namespace}
	case scenario.DenySysctl:
		return nil, []api.Field{api.Field_Sysctl}
	case scenario.DenyResources:
		return []api.Field{api.Field_MemLimit, api.Field_MemReservation, api.Field_MemSwapLimit, api.Field_MemKernelLimit,
				api.Field_MemTCPLimit, api.Field_MemSwappiness, api.Field_MemDisableOomKiller, api.Field_MemUseHierarchy,
				api.Field_CPUShares, api.Field_CPUQuota, api.Field_CPUPeriod, api.Field_CPURealtimeRuntime,
				api.Field_CPURealtimePeriod, api.Field_CPUSetCPUs, api.Field_CPUSetMems, api.Field_PidsLimit,
				api.Field_BlockioClass, api.Field_RdtClass},
			[]api.Field{api.Field_HugepageLimits, api.Field_CgroupsUnified}
	}
	return nil, nil
}

func matchGlob(glob, name string) bool {
	if glob == "" {
		return true
	}
	ok, _ := path.Match(glob, name) // validated when the scenario was loaded
	return ok
}

// ValidateContainerAdjustment rejects an adjustment that makes a change a
// matching rule denies.
func (p *policy) ValidateContainerAdjustment(_ context.Context, req *api.ValidateContainerAdjustmentRequest) error {
	id := req.GetContainer().GetId()
	for _, r := range p.rules {
		if !matchGlob(r.Pod, req.GetPod().GetName()) || !matchGlob(r.Container, req.GetContainer().GetName()) {
			continue
		}
		for _, kind := range r.Deny {
			if by := offenders(req.GetOwners(), id, kind); len(by) > 0 {
				return fmt.Errorf("policy rule %q denies %s changes: %s", r.Name, kind, strings.Join(by, ", "))
			}
		}
	}
	return nil
}

// offenders describes who changed fields of the kind in container id.
func offenders(owners *api.OwningPlugins, id, kind string) []string {
	simple, compound := denied(kind)
	var out []string
	for _, f := range simple {
		if who, ok := owners.SimpleOwner(id, f); ok {
			out = append(out, fmt.Sprintf("plugin %q set %s", who, fieldName(f)))
		}
	}
	for _, f := range compound {
		entries, _ := owners.CompoundOwners(id, f)
		for _, key := range slices.Sorted(maps.Keys(entries)) {
			out = append(out, fmt.Sprintf("plugin %q set %s %q", entries[key], fieldName(f), api.ClearRemovalMarker(key)))
		}
	}
	return out
}

// fieldName is a field's readable name ("OCI hooks", "env").
func fieldName(f api.Field) string {
	switch f {
	case api.Field_OciHooks:
		return "OCI hooks"
	case api.Field_Env:
		return "env"
	}
	return strings.ToLower(f.String()[:1]) + f.String()[1:]
}
