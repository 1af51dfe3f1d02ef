package filter

import (
	"fmt"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// benchPod returns a pod with ten labels, as a scheduler-managed pod
// typically has.
func benchPod() *api.PodSandbox {
	labels := map[string]string{"gpu": "true", "tier": "b", "accel": "gpu"}
	for i := len(labels); i < 10; i++ {
		labels[fmt.Sprintf("app.kubernetes.io/label-%d", i)] = fmt.Sprintf("value-%d", i)
	}
	return &api.PodSandbox{Id: "pod-1", Name: "trainer", Namespace: "ml", Labels: labels,
		Annotations: map[string]string{"example.com/owner": "team-a"}}
}

func benchContainer() *api.Container {
	return &api.Container{Id: "ctr-1", Name: "main", Image: &api.Image{Name: "registry.io/gpu/cuda:12"}}
}

func mustCompile(b testing.TB, scope *api.PluginScope, opts ...Option) *Filter {
	b.Helper()
	f, err := Compile(scope, opts...)
	if err != nil {
		b.Fatalf("Compile: %v", err)
	}
	return f
}

func BenchmarkMatchLabelSelector(b *testing.B) {
	f := mustCompile(b, &api.PluginScope{PodLabelSelector: "gpu=true,tier in (a,b),!legacy"})
	pod, ctr := benchPod(), benchContainer()
	if !f.MatchContainer(pod, ctr) {
		b.Fatal("benchmark scope does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchContainer(pod, ctr) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkMatchGlobs(b *testing.B) {
	f := mustCompile(b, &api.PluginScope{
		Namespaces: []string{"kube-*", "ml"},
		Images:     []string{"docker.io/*", "registry.io/gpu/*:1[0-9]"},
	})
	pod, ctr := benchPod(), benchContainer()
	if !f.MatchContainer(pod, ctr) {
		b.Fatal("benchmark scope does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchContainer(pod, ctr) {
			b.Fatal("no match")
		}
	}
}
