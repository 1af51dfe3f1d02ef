// Package scopetest holds the pods and containers the tests and
// benchmarks of package filter and filter/celscope match scopes against.
package scopetest

import (
	"fmt"

	"github.com/nrikit/nrikit/api"
)

// GPUPod is a labelled and annotated pod with a runtime handler.
func GPUPod() *api.PodSandbox {
	return &api.PodSandbox{
		Id: "pod-gpu", Name: "trainer", Namespace: "ml-team", Uid: "uid-1",
		Labels:         map[string]string{"gpu": "true", "tier": "a"},
		Annotations:    map[string]string{"example.com/accelerator": "nvidia-a100", "example.com/owner": "team-a"},
		RuntimeHandler: "nvidia",
	}
}

// PlainPod is a pod in the default namespace with a legacy label.
func PlainPod() *api.PodSandbox {
	return &api.PodSandbox{
		Id: "pod-plain", Name: "web", Namespace: "default",
		Labels:      map[string]string{"tier": "c", "legacy": "yes"},
		Annotations: map[string]string{"example.com/owner": "team-b"},
	}
}

// CUDAContainer is a container with an image, annotations, labels,
// arguments and environment.
func CUDAContainer() *api.Container {
	return &api.Container{
		Id: "ctr-cuda", Name: "trainer-main", Image: &api.Image{Name: "registry.io/gpu/cuda:12"},
		Annotations: map[string]string{"example.com/profile": "gpu-large"},
		Labels:      map[string]string{"role": "main"},
		Args:        []string{"python", "train.py"},
		Env:         []string{"CUDA_VISIBLE_DEVICES=0", "PATH=/bin"},
	}
}

// SidecarContainer is a container whose annotation contains
// CUDAContainer's as a substring.
func SidecarContainer() *api.Container {
	return &api.Container{
		Id: "ctr-side", Name: "sidecar", Image: &api.Image{Name: "docker.io/library/envoy:1.30"},
		Annotations: map[string]string{"example.com/profile": "my-gpu-large"},
	}
}

// BenchPod returns a pod with ten labels, as a scheduler-managed pod
// typically has.
func BenchPod() *api.PodSandbox {
	labels := map[string]string{"gpu": "true", "tier": "b", "accel": "gpu"}
	for i := len(labels); i < 10; i++ {
		labels[fmt.Sprintf("app.kubernetes.io/label-%d", i)] = fmt.Sprintf("value-%d", i)
	}
	return &api.PodSandbox{Id: "pod-1", Name: "trainer", Namespace: "ml", Labels: labels,
		Annotations: map[string]string{"example.com/owner": "team-a"}}
}

// BenchContainer is the container of the benchmarks.
func BenchContainer() *api.Container {
	return &api.Container{Id: "ctr-1", Name: "main", Image: &api.Image{Name: "registry.io/gpu/cuda:12"}}
}
