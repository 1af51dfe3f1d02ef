package adaptation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
)

// Required plugins gate pods and containers: the plugins the policy
// names (policy.Required) and those a pod lists in the annotation
// upstream's default validator reads (validator.RequiredPluginsAnnotation,
// for the pod, "/pod", or one container, "/container.NAME") must be
// registered for RunPodSandbox and CreateContainer to succeed, and their
// failure (a timeout included) fails the request whatever their failure
// policy. The administrator's PluginPolicy.Required gates CreateContainer
// only, as before (see missingRequiredLocked).

// Bounds of the required-plugins annotation: it is the pod's, untrusted.
const (
	// MaxRequiredAnnotationSize is the largest value of the annotation
	// the runtime reads, in bytes.
	MaxRequiredAnnotationSize = 1024
	// MaxRequiredAnnotationEntries is the most plugins it may list.
	MaxRequiredAnnotationEntries = 16
)

// requiredSet is the plugins an event requires by name (NAME or
// IDX-NAME), beyond the administrator's PluginPolicy.Required. The nil
// set requires none.
type requiredSet struct {
	names []string
}

// has reports whether p is required.
func (r *requiredSet) has(p *plugin) bool {
	if r == nil {
		return false
	}
	return slices.ContainsFunc(r.names, p.counts)
}

// counts reports whether p counts as the required plugin n (NAME or
// IDX-NAME): it has that name and an identity the policy takes for it (a
// plugin registering under a name the policy requires without the
// identity its entry takes is refused, see admit; one a reload left
// without it counts for nothing).
func (p *plugin) counts(n string) bool {
	return (n == p.name || n == p.full) && p.unbound() == nil
}

// requiredFor returns the plugins the policy and the pod's annotation
// require for an event about s (for a container if s has one), or an
// error if the annotation is invalid or beyond its bounds.
func (a *Adaptation) requiredFor(s subject) (*requiredSet, error) {
	pol := a.pol.Load().Required()
	var (
		value string
		found bool
	)
	if s.ctr != nil {
		value, found = api.EffectiveAnnotation(s.pod, validator.RequiredPluginsAnnotation, s.ctr.GetName())
	} else {
		value, found = api.EffectivePodAnnotation(s.pod, validator.RequiredPluginsAnnotation)
	}
	if len(pol) == 0 && !found {
		return nil, nil
	}
	r := &requiredSet{names: pol}
	if !found {
		return r, nil
	}
	listed, err := parseRequired(value)
	if err != nil {
		return nil, fmt.Errorf("adaptation: pod %s/%s: invalid %s annotation: %w",
			s.pod.GetNamespace(), s.pod.GetName(), validator.RequiredPluginsAnnotation, err)
	}
	r.names = append(slices.Clip(r.names), listed...)
	return r, nil
}

// parseRequired parses the annotation's list within its bounds; each
// entry must be a plugin's NAME or IDX-NAME.
func parseRequired(value string) ([]string, error) {
	if len(value) > MaxRequiredAnnotationSize {
		return nil, fmt.Errorf("%d bytes, above the limit of %d", len(value), MaxRequiredAnnotationSize)
	}
	names, err := validator.ParsePluginList(value)
	if err != nil {
		return nil, err
	}
	if len(names) > MaxRequiredAnnotationEntries {
		return nil, fmt.Errorf("%d plugins, above the limit of %d", len(names), MaxRequiredAnnotationEntries)
	}
	for _, n := range names {
		name := n
		if idx, rest, ok := strings.Cut(n, "-"); ok && api.CheckPluginIndex(idx) == nil {
			name = rest
		}
		if err := api.CheckPluginName(name); err != nil {
			return nil, fmt.Errorf("entry %q: %w", clip(n), err)
		}
	}
	return names, nil
}

// missingLocked returns a *RequiredPluginError naming the first plugin of
// r that is not registered (one registered but not sent the event,
// because the subject is outside its scope or it opted out, had its say).
// The caller holds a.mu.
func (a *Adaptation) missingLocked(r *requiredSet) error {
	if r == nil {
		return nil
	}
	for _, n := range r.names {
		if slices.ContainsFunc(a.plugins, func(p *plugin) bool { return p.counts(n) }) {
			continue
		}
		// One of that name, connected without the identity the policy
		// takes for it, is named with the reason.
		for _, p := range a.plugins {
			if n == p.name || n == p.full {
				return &RequiredPluginError{Plugin: n, Err: p.unbound()}
			}
		}
		return &RequiredPluginError{Plugin: n}
	}
	return nil
}
