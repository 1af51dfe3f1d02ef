package wire

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

// benchPod and benchCtr are the benchmarks' pod and containers: the
// adaptation benchmarks' (a small pod, a container with labels,
// annotations, arguments and environment), so figures compare with
// theirs.
func benchPod() *api.PodSandbox {
	return &api.PodSandbox{Id: "pod1", Name: "pod-1", Namespace: "default", Uid: "uid-1"}
}

func benchCtr(i int) *api.Container {
	return &api.Container{Id: "ctr", PodSandboxId: "pod1", Name: "ctr",
		Labels:      map[string]string{"app": "benchmark", "tier": "backend", "index": "1"},
		Annotations: map[string]string{"io.kubernetes.container.hash": "0000000" + string(rune('0'+i%10))},
		Args:        []string{"/usr/bin/server", "--port=8080", "--verbose"},
		Env:         []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "HOME=/root"}}
}

// BenchmarkEncode measures the encoding of one event's requests for four
// connected plugins: a CreateContainer (a request of its own per
// plugin, the pod shared), a notification (one encoding for all), and a
// Synchronize of 100 pods and 2,000 realistic containers in parts.
func BenchmarkEncode(b *testing.B) {
	b.Run("CreateContainer4", func(b *testing.B) {
		pod := benchPod()
		reqs := make([]*api.CreateContainerRequest, 4)
		for i := range reqs {
			reqs[i] = &api.CreateContainerRequest{Pod: pod, Container: benchCtr(i)}
		}
		b.ReportAllocs()
		for b.Loop() {
			sh := NewShared(maxCreate)
			for _, r := range reqs {
				enc, buf, err := sh.Encode(r)
				if err != nil || len(enc) == 0 {
					b.Fatal(err)
				}
				buf.Free()
			}
		}
	})
	b.Run("Notify4", func(b *testing.B) {
		req := &api.PostCreateContainerRequest{Pod: benchPod(), Container: benchCtr(1)}
		b.ReportAllocs()
		for b.Loop() {
			sh := NewShared(maxCreate)
			for range 4 {
				if enc, _, err := sh.Encode(req); err != nil || len(enc) == 0 {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Synchronize", func(b *testing.B) {
		pods, ctrs := snapshot(100, 2000)
		b.ReportAllocs()
		for b.Loop() {
			parts := EncodedSyncParts(pods, ctrs, syncLimit)
			for {
				_, _, ok, err := parts.Next()
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					break
				}
			}
			parts.Stop()
		}
	})
}
