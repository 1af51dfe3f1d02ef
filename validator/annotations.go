package validator

const (
	// AnnotationDomain is the domain of NRI's own annotations.
	AnnotationDomain = "noderesource.dev"

	// RequiredPluginsAnnotation annotates a pod with plugins that must
	// have seen the creation of its containers, as a YAML list of plugin
	// names or IDX-NAMEs (e.g. `["10-resmgr", "logger"]`). It is scoped
	// like any effective annotation (see api.EffectiveAnnotation).
	RequiredPluginsAnnotation = "required-plugins." + AnnotationDomain
)
