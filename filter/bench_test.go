package filter

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/internal/scopetest"
)

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
	pod, ctr := scopetest.BenchPod(), scopetest.BenchContainer()
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
	pod, ctr := scopetest.BenchPod(), scopetest.BenchContainer()
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
