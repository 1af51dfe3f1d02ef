package celscope

import (
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter/internal/scopetest"
)

func BenchmarkMatchCEL(b *testing.B) {
	f := compile(b, &api.PluginScope{Cel: `pod.labels["accel"] == "gpu" && container.name != "sidecar"`})
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

func BenchmarkMatchCELPod(b *testing.B) {
	f := compile(b, &api.PluginScope{Cel: `pod.labels["accel"] == "gpu" && container.name != "sidecar"`})
	pod := scopetest.BenchPod()
	if !f.MatchPod(pod) {
		b.Fatal("benchmark scope does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		if !f.MatchPod(pod) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCompileCEL(b *testing.B) {
	scope := &api.PluginScope{Cel: `pod.labels["accel"] == "gpu" && container.name != "sidecar"`}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compileErr(scope); err != nil {
			b.Fatal(err)
		}
	}
}
