package wasmguest

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/codecfixture"
)

// envAdder is the bench-interop plugin's work: one environment variable
// added in CreateContainer.
type envAdder struct{}

func (envAdder) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("BENCH", "1")
	return adj, nil, nil
}

// BenchmarkHandle measures a guest's side of one CreateContainer call of
// about 2.4 KB (decode, handler, encode), natively or, built for wasip1,
// in wazero (internal/wasmhost/testdata/termcost runs it with and without
// the termination checks of a bounded call).
func BenchmarkHandle(b *testing.B) {
	g, err := New(envAdder{})
	if err != nil {
		b.Fatal(err)
	}
	pod := codecfixture.Pod(0)
	req, err := proto.Marshal(&api.CreateContainerRequest{Pod: pod, Container: codecfixture.Container(0, pod.Id)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := g.Handle(FuncConfigure, nil); err != nil {
		b.Fatal(err)
	}
	// "copies" is Handle, "owned" the export path, where the request's
	// buffer is the guest's and the strings point into it.
	for _, owned := range []bool{false, true} {
		name := "copies"
		if owned {
			name = "owned"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(req)))
			b.ReportAllocs()
			for b.Loop() {
				out, err := g.handle(FuncCreateContainer, req, owned)
				if err != nil {
					b.Fatal(err)
				}
				if len(out) == 0 {
					b.Fatal("empty response")
				}
			}
		})
	}
	// The response must carry the adjustment.
	out, _ := g.Handle(FuncCreateContainer, req)
	rsp := &api.CreateContainerResponse{}
	if err := proto.Unmarshal(out, rsp); err != nil || len(rsp.GetAdjust().GetEnv()) != 1 {
		b.Fatalf("response %v, error %v; want one environment variable", rsp, err)
	}
}
