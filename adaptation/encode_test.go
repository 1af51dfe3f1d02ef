package adaptation

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// decodesTo fails t unless msg marshals to bytes that decode to want
// (map entries are encoded in random order, so bytes are not compared).
func decodesTo(t *testing.T, msg, want proto.Message) {
	t.Helper()
	buf, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if n := proto.Size(want); len(buf) != n {
		t.Fatalf("encoding is %d bytes, the request's %d", len(buf), n)
	}
	got := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(buf, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("the encoding decodes to %v, want %v", got, want)
	}
}

// TestSharedWholeRequest checks that a request sent to several plugins
// is encoded once, and that another request is encoded anew.
func TestSharedWholeRequest(t *testing.T) {
	req := &api.UpdatePodSandboxRequest{Pod: testPod(1), OverheadLinuxResources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}}
	sh := &shared{}
	first, err := sh.wire(req)
	if err != nil || first == proto.Message(req) {
		t.Fatalf("first send: %v, %v; want its encoding", first, err)
	}
	decodesTo(t, first, req)
	if again, err := sh.wire(req); err != nil || again != first {
		t.Error("the second send encoded the request again")
	}
	other := &api.UpdatePodSandboxRequest{Pod: testPod(2)}
	msg, err := sh.wire(other)
	if err != nil || msg == first {
		t.Fatalf("another request: %v, %v; want its own encoding", msg, err)
	}
	decodesTo(t, msg, other)
	var none *shared
	if got, _ := none.wire(req); got != proto.Message(req) {
		t.Error("without a shared, the request is not sent as itself")
	}
}

// TestSharedConcurrent checks that plugins sending one request at once
// share one encoding.
func TestSharedConcurrent(t *testing.T) {
	req := &api.PostCreateContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	sh := &shared{}
	msgs := make(chan proto.Message, 16)
	var wg sync.WaitGroup
	for range cap(msgs) {
		wg.Go(func() {
			msg, err := sh.wire(req)
			if err != nil {
				t.Error(err)
			}
			msgs <- msg
		})
	}
	wg.Wait()
	close(msgs)
	first := <-msgs
	decodesTo(t, first, req)
	for msg := range msgs {
		if msg != first {
			t.Fatal("the request was encoded more than once")
		}
	}
}

// TestSharedObjects checks that a request made of a pod and a container
// is encoded on its first send, once for every send.
func TestSharedObjects(t *testing.T) {
	req := &api.PostStartContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	sh := &shared{}
	first, err := sh.wire(req)
	if err != nil || first == proto.Message(req) {
		t.Fatalf("first send: %v, %v; want its encoding", first, err)
	}
	decodesTo(t, first, req)
	if again, _ := sh.wire(req); again != first {
		t.Error("the request was encoded again")
	}
	pod := &api.RunPodSandboxRequest{Pod: testPod(2)}
	msg, err := sh.wire(pod)
	if err != nil {
		t.Fatal(err)
	}
	decodesTo(t, msg, pod)
	odd := &api.StopPodSandboxRequest{Pod: testPod(3)}
	odd.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 1999, protowire.VarintType), 7))
	// Not by hand (protobuf-go keeps the unknown fields).
	msg, err = sh.wire(odd)
	if err != nil {
		t.Fatal(err)
	}
	decodesTo(t, msg, odd)
}

// TestSharedCreateContainer checks the hand encoding of CreateContainer
// requests: the pod once for the event, the container for each, and a
// request above NRI's limit refused.
func TestSharedCreateContainer(t *testing.T) {
	pod := testPod(1)
	sh := &shared{}
	for i := range 3 {
		req := &api.CreateContainerRequest{Pod: pod, Container: bigCtr(i)}
		msg, err := sh.wire(req)
		if err != nil {
			t.Fatal(err)
		}
		decodesTo(t, msg, req)
	}
	enc := sh.podField
	if _, err := sh.wire(&api.CreateContainerRequest{Pod: pod, Container: bigCtr(4)}); err != nil || &sh.podField[0] != &enc[0] {
		t.Error("the pod was encoded again")
	}
	huge := bigCtr(5)
	huge.Args = []string{strings.Repeat("x", MaxMessageSize)}
	_, err := sh.wire(&api.CreateContainerRequest{Pod: pod, Container: huge})
	var tooLarge *requestSizeError
	if !errors.As(err, &tooLarge) || tooLarge.size <= maxRequestPayload {
		t.Errorf("an oversized request: %v, want a *requestSizeError", err)
	}
}

// clobberService changes every request it gets.
type clobberService struct{ api.PluginService }

func (clobberService) PostStartContainer(_ context.Context, req *api.PostStartContainerRequest) (*api.PostStartContainerResponse, error) {
	req.Pod.Name = "changed"
	req.Container.Env = nil
	return &api.PostStartContainerResponse{}, nil
}

// TestBuiltinGetsClone checks that a builtin plugin cannot change the
// request the runtime passed on.
func TestBuiltinGetsClone(t *testing.T) {
	ep := newBuiltinEndpoint(clobberService{})
	defer ep.Close()
	req := &api.PostStartContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	want := proto.Clone(req)
	rsp, err := send[*api.PostStartContainerResponse](context.Background(), ep, rpcPostStartContainer.method, req, &shared{})
	if err != nil || rsp == nil {
		t.Fatalf("call: %v, %v", rsp, err)
	}
	if !proto.Equal(req, want) {
		t.Error("the builtin plugin changed the runtime's request")
	}
}
