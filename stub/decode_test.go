package stub_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

// TestRequestsDecodedWhole checks that a handler gets the whole pod and
// container the runtime sent (the stub decodes them with its own
// decoder), and that an interceptor the plugin sets still sees every
// request.
func TestRequestsDecodedWhole(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	var (
		mu         sync.Mutex
		gotPod     *api.PodSandbox
		gotCtr     *api.Container
		intercepts atomic.Int32
	)
	plugin := &creator{fn: func(_ context.Context, p *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
		mu.Lock()
		gotPod, gotCtr = p, c
		mu.Unlock()
		return &api.ContainerAdjustment{}, nil, nil
	}}
	counting := func(ctx context.Context, u ttrpc.Unmarshaler, _ *ttrpc.UnaryServerInfo, m ttrpc.Method) (any, error) {
		intercepts.Add(1)
		return m(ctx, u)
	}
	_, p := startStub(t, rt, plugin,
		stub.WithTTRPCOptions(nil, []ttrpc.ServerOpt{ttrpc.WithUnaryServerInterceptor(counting)}))
	before := intercepts.Load()

	sentPod := pod("p")
	sentPod.Labels = map[string]string{"app": "web", "tier": "front"}
	sentPod.Annotations = map[string]string{"a": "1"}
	sentPod.Ips = []string{"10.0.0.1", "fd00::1"}
	sentPod.Linux = &api.LinuxPodSandbox{CgroupParent: "/kubepods"}
	sentCtr := ctr("c", "p")
	sentCtr.State = api.ContainerState_CONTAINER_CREATED
	sentCtr.Labels = map[string]string{"l": "v"}
	sentCtr.Annotations = map[string]string{"io.example/x": "y"}
	sentCtr.Args = []string{"/bin/sh", "-c", "true"}
	sentCtr.Env = []string{"A=1", "B=2"}
	sentCtr.Mounts = []*api.Mount{{Destination: "/data", Type: "bind", Source: "/srv", Options: []string{"rbind", "ro"}}}
	sentCtr.Linux = &api.LinuxContainer{Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1 << 30)}}}
	sentCtr.Pid = 42
	sentCtr.CreatedAt = 1700000000
	sentCtr.Rlimits = []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512}}
	sentCtr.ProtoReflect().SetUnknown(protoreflect.RawFields{0xc0, 0x3e, 0x01}) // field 1000, varint 1

	if _, err := p.CreateContainer(testContext(t), sentPod, sentCtr); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !proto.Equal(gotPod, sentPod) {
		t.Errorf("handler got pod\n%v\nwant\n%v", gotPod, sentPod)
	}
	if !proto.Equal(gotCtr, sentCtr) {
		t.Errorf("handler got container\n%v\nwant\n%v", gotCtr, sentCtr)
	}
	if n := intercepts.Load() - before; n != 1 {
		t.Errorf("the plugin's interceptor saw %d requests for one CreateContainer, want 1", n)
	}
}
