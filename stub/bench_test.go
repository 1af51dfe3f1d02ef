package stub_test

import (
	"context"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// BenchmarkCreateContainer measures one CreateContainer round trip from
// the runtime through the stub to the handler and back, over a socket
// pair.
func BenchmarkCreateContainer(b *testing.B) {
	rt := stubtest.NewRuntime(b)
	_, p := rt.StartPlugin(b, &creator{})
	ctx := context.Background()
	pd, c := pod("p"), ctr("c", "p")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.CreateContainer(ctx, pd, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSynchronizeParts measures collecting a Synchronize split into
// parts: 1000 containers in parts of 100.
func BenchmarkSynchronizeParts(b *testing.B) {
	ctrs := make([]*api.Container, 1000)
	for i := range ctrs {
		ctrs[i] = ctr("c", "p")
	}
	rt := stubtest.NewRuntime(b)
	_, p := rt.StartPlugin(b, &syncer{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(ctrs); i += 100 {
			req := &api.SynchronizeRequest{Containers: ctrs[i : i+100], More: i+100 < len(ctrs)}
			if _, err := p.Client().Synchronize(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
}
