package wire

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// maxCreate is the CreateContainer limit of the tests' Shareds: what
// NRI's message limit leaves for a request.
const maxCreate = maxMessage - 16<<10

// decodesTo fails t unless enc, an encoding Encode made, decodes to want
// (map entries are encoded in random order, so bytes are not compared).
func decodesTo(t *testing.T, enc []byte, want proto.Message) {
	t.Helper()
	if n := proto.Size(want); len(enc) != n {
		t.Fatalf("encoding is %d bytes, the request's %d", len(enc), n)
	}
	got := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(enc, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("the encoding decodes to %v, want %v", got, want)
	}
}

// wireKept returns the encoding sh.Encode makes for req, failing t unless
// it is kept (not in a recycled buffer).
func wireKept(t *testing.T, sh *Shared, req proto.Message) []byte {
	t.Helper()
	enc, buf, err := sh.Encode(req)
	if err != nil || enc == nil || buf != nil {
		t.Fatalf("Encode: %d bytes, buffer %v, %v; want a kept encoding", len(enc), buf, err)
	}
	return enc
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// TestSharedWholeRequest checks that a request sent to several plugins
// is encoded once, and that another request is encoded anew.
func TestSharedWholeRequest(t *testing.T) {
	req := &api.UpdatePodSandboxRequest{Pod: testPod(1), OverheadLinuxResources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(512)}}}
	sh := NewShared(maxCreate)
	first := wireKept(t, sh, req)
	decodesTo(t, first, req)
	if again := wireKept(t, sh, req); !sameBytes(again, first) {
		t.Error("the second send encoded the request again")
	}
	other := &api.UpdatePodSandboxRequest{Pod: testPod(2)}
	msg := wireKept(t, sh, other)
	if sameBytes(msg, first) {
		t.Fatal("another request: the first one's encoding")
	}
	decodesTo(t, msg, other)
	var none *Shared
	if enc, buf, err := none.Encode(req); enc != nil || buf != nil || err != nil {
		t.Error("without a shared, the request is encoded by the connection")
	}
}

// TestSharedConcurrent checks that plugins sending one request at once
// share one encoding.
func TestSharedConcurrent(t *testing.T) {
	req := &api.PostCreateContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	sh := NewShared(maxCreate)
	encs := make(chan []byte, 16)
	var wg sync.WaitGroup
	for range cap(encs) {
		wg.Go(func() {
			enc, _, err := sh.Encode(req)
			if err != nil {
				t.Error(err)
			}
			encs <- enc
		})
	}
	wg.Wait()
	close(encs)
	first := <-encs
	decodesTo(t, first, req)
	for enc := range encs {
		if !sameBytes(enc, first) {
			t.Fatal("the request was encoded more than once")
		}
	}
}

// TestSharedObjects checks that a request made of a pod and a container
// is encoded on its first send, once for every send.
func TestSharedObjects(t *testing.T) {
	req := &api.PostStartContainerRequest{Pod: testPod(1), Container: bigCtr(1)}
	sh := NewShared(maxCreate)
	first := wireKept(t, sh, req)
	decodesTo(t, first, req)
	if again := wireKept(t, sh, req); !sameBytes(again, first) {
		t.Error("the request was encoded again")
	}
	pod := &api.RunPodSandboxRequest{Pod: testPod(2)}
	decodesTo(t, wireKept(t, sh, pod), pod)
	odd := &api.StopPodSandboxRequest{Pod: testPod(3)}
	odd.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 1999, protowire.VarintType), 7))
	// Not by hand (protobuf-go keeps the unknown fields).
	decodesTo(t, wireKept(t, sh, odd), odd)
}

// TestSharedCreateContainer checks the hand encoding of CreateContainer
// requests: the pod once for the event (by the first request itself,
// then once for the others), the container for each, every request into
// a recycled buffer of its own, and a request above NRI's limit refused.
func TestSharedCreateContainer(t *testing.T) {
	pod := testPod(1)
	sh := NewShared(maxCreate)
	var bufs []*Buffer
	for i := range 3 {
		req := &api.CreateContainerRequest{Pod: pod, Container: bigCtr(i)}
		enc, buf, err := sh.Encode(req)
		if err != nil || buf == nil || !sameBytes(enc, buf.b) {
			t.Fatalf("request %d: %d bytes, buffer %v, %v; want its own buffer", i, len(enc), buf, err)
		}
		decodesTo(t, enc, req)
		if want := i > 0; (sh.podField != nil) != want {
			t.Errorf("request %d: pod encoded for the others %v, want %v", i, sh.podField != nil, want)
		}
		for _, b := range bufs {
			if b == buf {
				t.Fatal("two requests of the event got one buffer")
			}
		}
		bufs = append(bufs, buf)
	}
	enc := sh.podField
	if _, buf, err := sh.Encode(&api.CreateContainerRequest{Pod: pod, Container: bigCtr(4)}); err != nil || !sameBytes(sh.podField, enc) {
		t.Error("the pod was encoded again")
	} else {
		buf.Free()
	}
	for _, b := range bufs {
		b.Free()
	}
	huge := bigCtr(5)
	huge.Args = []string{strings.Repeat("x", maxMessage)}
	_, buf, err := sh.Encode(&api.CreateContainerRequest{Pod: pod, Container: huge})
	var tooLarge *RequestSizeError
	if !errors.As(err, &tooLarge) || tooLarge.Size <= maxCreate || tooLarge.Limit != maxCreate || buf != nil {
		t.Errorf("an oversized request: %v (buffer %v), want a *RequestSizeError", err, buf)
	}
}

// TestBufferBound checks that a buffer above maxPooledEncoding is not
// kept for reuse (one huge request must not pin its memory), and that a
// buffer has room for what it was asked for.
func TestBufferBound(t *testing.T) {
	big := getBuffer(maxPooledEncoding + 1)
	big.Free()
	for range 8 {
		if b := getBuffer(1); cap(b.b) > maxPooledEncoding {
			t.Fatalf("a %d-byte buffer came back from the pool, above the bound of %d", cap(b.b), maxPooledEncoding)
		}
	}
	if b := getBuffer(3000); cap(b.b) < 3000 || len(b.b) != 0 {
		t.Errorf("getBuffer(3000): len %d cap %d", len(b.b), cap(b.b))
	}
}

// TestCreateContainerEncodingAllocs bounds what encoding a CreateContainer
// request for one more plugin allocates: nothing, its buffer recycled
// (once the pod's encoding is shared; slack for the pool, which may
// drop buffers, under the race detector on purpose).
func TestCreateContainerEncodingAllocs(t *testing.T) {
	pod := testPod(1)
	reqs := []*api.CreateContainerRequest{{Pod: pod, Container: bigCtr(1)}, {Pod: pod, Container: bigCtr(2)}}
	sh := NewShared(maxCreate)
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		enc, buf, err := sh.Encode(reqs[i%len(reqs)])
		i++
		if err != nil || len(enc) == 0 {
			t.Fatalf("Encode: %d bytes, %v", len(enc), err)
		}
		buf.Free()
	})
	if allocs > 1 {
		t.Errorf("encoding a CreateContainer request allocates %.1f times, want at most 1", allocs)
	}
}

// TestSendEncoded checks that the interceptor sends a CallPayload's bytes
// as the payload of the call they were made for only, found through a
// context derived from the call's, and takes them out again when the
// call returns (the caller reuses the buffer).
func TestSendEncoded(t *testing.T) {
	type key struct{}
	payload := []byte{1, 2, 3}
	base := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := context.WithCancel(&encodedCtx{Context: base, method: "CreateContainer", payload: payload})
	defer cancel()
	if ctx.Value(key{}) != "v" {
		t.Fatal("the call's context lost its parent's values")
	}
	for _, tc := range []struct {
		method string
		want   []byte
	}{{"CreateContainer", payload}, {"StopContainer", nil}} {
		req := &ttrpc.Request{Method: tc.method}
		var sent []byte
		err := SendEncoded(ctx, req, &ttrpc.Response{}, nil, func(_ context.Context, r *ttrpc.Request, _ *ttrpc.Response) error {
			sent = r.Payload
			return nil
		})
		if err != nil || !bytes.Equal(sent, tc.want) {
			t.Errorf("%s: sent %v, %v; want %v", tc.method, sent, err, tc.want)
		}
		if req.Payload != nil {
			t.Errorf("%s: the payload is still in the request after the call", tc.method)
		}
	}
}

// TestSharedValidation checks the encoding of a validation request (its
// pod and container by hand, the rest appended): it decodes to the
// request, is kept for every send, and one with unknown fields keeps
// them.
func TestSharedValidation(t *testing.T) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv("A", "1")
	req := &api.ValidateContainerAdjustmentRequest{Pod: testPod(1), Container: bigCtr(1), Adjust: adj,
		Update:  []*api.ContainerUpdate{{ContainerId: "other"}},
		Owners:  &api.OwningPlugins{Owners: map[string]*api.FieldOwners{"ctr1": {Simple: map[int32]string{1: "10-a"}}}},
		Plugins: []*api.PluginInstance{{Name: "a", Index: "10"}}}
	sh := NewShared(maxCreate)
	first := wireKept(t, sh, req)
	decodesTo(t, first, req)
	if again := wireKept(t, sh, req); !sameBytes(again, first) {
		t.Error("the request was encoded again")
	}
	odd := proto.Clone(req).(*api.ValidateContainerAdjustmentRequest)
	odd.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 1999, protowire.VarintType), 7))
	decodesTo(t, wireKept(t, NewShared(maxCreate), odd), odd)
}
