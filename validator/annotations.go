package validator

import "github.com/nrikit/nrikit/api"

const (
	// AnnotationDomain is the domain of NRI's own annotations.
	AnnotationDomain = "noderesource.dev"

	// RequiredPluginsAnnotation annotates a pod with plugins that must
	// have seen the creation of its containers, as a YAML list of plugin
	// names or IDX-NAMEs (e.g. `["10-resmgr", "logger"]`). It is scoped
	// like any effective annotation (see EffectiveAnnotation).
	RequiredPluginsAnnotation = "required-plugins." + AnnotationDomain
)

// EffectiveAnnotation returns the value of the pod annotation key that
// applies to the named container: "<key>/container.<container>" if
// present, else "<key>/pod", else "<key>".
func EffectiveAnnotation(pod *api.PodSandbox, key, container string) (string, bool) {
	annotations := pod.GetAnnotations()
	if len(annotations) == 0 {
		return "", false
	}
	for _, k := range []string{key + "/container." + container, key + "/pod", key} {
		if v, ok := annotations[k]; ok {
			return v, true
		}
	}
	return "", false
}
