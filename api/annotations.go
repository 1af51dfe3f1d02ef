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
	var buf [128]byte
	if v, ok := annotations[string(scopedKey(buf[:0], key, "/container.", container))]; ok {
		return v, true
	}
	return effectivePodAnnotation(annotations, key)
}

// EffectivePodAnnotation returns the value of the pod annotation key that
// applies to the pod itself: "<key>/pod" if present, else "<key>". It is
// EffectiveAnnotation for events about a pod rather than a container.
func EffectivePodAnnotation(pod *PodSandbox, key string) (string, bool) {
	annotations := pod.GetAnnotations()
	if len(annotations) == 0 {
		return "", false
	}
	return effectivePodAnnotation(annotations, key)
}

func effectivePodAnnotation(annotations map[string]string, key string) (string, bool) {
	var buf [128]byte
	if v, ok := annotations[string(scopedKey(buf[:0], key, "/pod", ""))]; ok {
		return v, true
	}
	v, ok := annotations[key]
	return v, ok
}

// scopedKey appends key, suffix and name to dst. The lookups above index
// the map with string(dst), which the compiler does without copying, so a
// key that fits the caller's stack buffer costs no allocation.
func scopedKey(dst []byte, key, suffix, name string) []byte {
	dst = append(dst, key...)
	dst = append(dst, suffix...)
	return append(dst, name...)
}
