package api_test

import (
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
