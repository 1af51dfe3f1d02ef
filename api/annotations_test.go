package api_test

import (
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestEffectiveAnnotation(t *testing.T) {
	const key = "k.example.com"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
		found       bool
	}{
		{"none", nil, "", false},
		{"unrelated", map[string]string{"other": "x"}, "", false},
		{"plain", map[string]string{key: "plain"}, "plain", true},
		{"pod scope wins over plain", map[string]string{key: "plain", key + "/pod": "pod"}, "pod", true},
		{"container scope wins", map[string]string{key: "plain", key + "/pod": "pod", key + "/container.app": "ctr"}, "ctr", true},
		{"other container", map[string]string{key + "/container.db": "ctr"}, "", false},
		{"empty value", map[string]string{key: ""}, "", true},
	} {
		got, found := api.EffectiveAnnotation(&api.PodSandbox{Annotations: tc.annotations}, key, "app")
		if got != tc.want || found != tc.found {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
	if _, found := api.EffectiveAnnotation(nil, key, "app"); found {
		t.Errorf("nil pod has annotations")
	}
}

func TestEffectivePodAnnotation(t *testing.T) {
	const key = "k.example.com"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
		found       bool
	}{
		{"none", nil, "", false},
		{"plain", map[string]string{key: "plain"}, "plain", true},
		{"pod scope wins over plain", map[string]string{key: "plain", key + "/pod": "pod"}, "pod", true},
		{"container scope ignored", map[string]string{key + "/container.app": "ctr"}, "", false},
	} {
		got, found := api.EffectivePodAnnotation(&api.PodSandbox{Annotations: tc.annotations}, key)
		if got != tc.want || found != tc.found {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
}

// TestEffectiveAnnotationLongNames checks keys longer than the lookup's
// stack buffer: they are found the same way.
func TestEffectiveAnnotationLongNames(t *testing.T) {
	key := strings.Repeat("k", 200) + ".example.com"
	ctr := strings.Repeat("c", 300)
	pod := &api.PodSandbox{Annotations: map[string]string{key + "/container." + ctr: "ctr", key + "/pod": "pod"}}
	if got, _ := api.EffectiveAnnotation(pod, key, ctr); got != "ctr" {
		t.Errorf("container scope: got %q, want ctr", got)
	}
	if got, _ := api.EffectivePodAnnotation(pod, key); got != "pod" {
		t.Errorf("pod scope: got %q, want pod", got)
	}
}

// TestEffectiveAnnotationAllocations checks that reading an annotation
// costs no allocation: the runtime reads one on every CreateContainer.
func TestEffectiveAnnotationAllocations(t *testing.T) {
	const key = "required-plugins.noderesource.dev"
	pod := &api.PodSandbox{Annotations: map[string]string{"io.kubernetes.pod.name": "p", key + "/pod": "[a]"}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := api.EffectiveAnnotation(pod, key, "app"); !ok {
			t.Fatal("not found")
		}
		if _, ok := api.EffectivePodAnnotation(pod, key); !ok {
			t.Fatal("not found")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per lookup, want 0", allocs)
	}
}
