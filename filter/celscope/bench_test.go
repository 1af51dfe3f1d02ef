package celscope

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

func BenchmarkMatchCEL(b *testing.B) {
	f := compile(b, &api.PluginScope{Cel: `pod.labels["accel"] == "gpu" && container.name != "sidecar"`})
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

func BenchmarkMatchCELPod(b *testing.B) {
	f := compile(b, &api.PluginScope{Cel: `pod.labels["accel"] == "gpu" && container.name != "sidecar"`})
	pod := benchPod()
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
