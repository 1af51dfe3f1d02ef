package filter

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// TestSatisfy: Satisfy makes a pod and container that the scope excluded
// match it, where the scope says how; it reports when it cannot.
func TestSatisfy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope *api.PluginScope
		want  bool
	}{
		{"none", nil, true},
		{"namespace glob", &api.PluginScope{Namespaces: []string{"team-?-[0-9]*"}}, true},
		{"labels", &api.PluginScope{PodLabelSelector: "team=a, tier in (gpu,cpu), accel, !legacy, env!=prod, zone notin (x)"}, true},
		{"contradiction", &api.PluginScope{PodLabelSelector: "team=a,team!=a"}, false},
		{"pod annotations", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "example.com/gpu", Op: api.AnnotationMatch_EQUALS, Value: "yes"}}}, true},
		{"literal regex", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "k", Op: api.AnnotationMatch_REGEX, Value: "on"}}}, true},
		{"real regex", &api.PluginScope{PodAnnotations: []*api.AnnotationMatch{{Key: "k", Op: api.AnnotationMatch_REGEX, Value: "o[n]+"}}}, false},
		{"handler", &api.PluginScope{RuntimeHandlers: []string{"kata"}}, true},
		{"container", &api.PluginScope{ContainerNames: []string{"train*"}, Images: []string{"registry.io/gpu/*"},
			ContainerAnnotations: []*api.AnnotationMatch{{Key: "gpu", Op: api.AnnotationMatch_EXISTS}}}, true},
		{"negated class", &api.PluginScope{Namespaces: []string{"[!a-z]x"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Compile(tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			pod := &api.PodSandbox{Name: "p", Namespace: "default", Labels: map[string]string{"legacy": "1", "env": "prod", "zone": "x"}, RuntimeHandler: "runc"}
			ctr := &api.Container{Name: "c", Image: &api.Image{Name: "docker.io/busybox"}}
			got := f.Satisfy(pod, ctr)
			if got != tc.want {
				t.Fatalf("Satisfy = %v, want %v (pod %v, container %v)", got, tc.want, pod, ctr)
			}
			if got != f.MatchContainer(pod, ctr) {
				t.Errorf("Satisfy reported %v, but MatchContainer says %v", got, !got)
			}
		})
	}
}
