package api

// EffectiveAnnotation returns the value of the pod annotation key that
// applies to the named container, the way NRI's annotation-driven plugins
// and the default validator read them: "<key>/container.<container>" if
// present, else "<key>/pod", else "<key>".
func EffectiveAnnotation(pod *PodSandbox, key, container string) (string, bool) {
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
