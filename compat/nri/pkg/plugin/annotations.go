// Package plugin is upstream's pkg/plugin on nrikit: the annotations NRI
// plugins and the default validator read.
package plugin

import (
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
)

const (
	// AnnotationDomain is the domain of NRI's annotations.
	AnnotationDomain = validator.AnnotationDomain
	// RequiredPluginsAnnotation lists, on a pod, plugins that must
	// process its containers at creation (the default validator rejects
	// the creation otherwise).
	RequiredPluginsAnnotation = validator.RequiredPluginsAnnotation
)

// GetEffectiveAnnotation returns the value of pod's annotation key that
// applies to the named container: "KEY/container.NAME", else "KEY/pod",
// else "KEY" (nrikit's api.EffectiveAnnotation).
func GetEffectiveAnnotation(pod *api.PodSandbox, key, container string) (string, bool) {
	return api.EffectiveAnnotation(pod, key, container)
}
