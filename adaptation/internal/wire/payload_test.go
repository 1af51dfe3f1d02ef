package wire

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"google.golang.org/protobuf/proto"
)

// recordingPlugin is a Plugin service that records the CreateContainer
// and Synchronize requests it decodes.
type recordingPlugin struct {
	api.PluginService
	mu      sync.Mutex
	creates []*api.CreateContainerRequest
	syncs   []*api.SynchronizeRequest
}

func (p *recordingPlugin) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates = append(p.creates, req)
	return &api.CreateContainerResponse{}, nil
}

func (p *recordingPlugin) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncs = append(p.syncs, req)
	return &api.SynchronizeResponse{More: req.More}, nil
}

// servePlugin serves p over a unix socket and returns a client of it with
// SendEncoded as its interceptor, as a plugin connection's.
func servePlugin(t *testing.T, p api.PluginService) *ttrpc.Client {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "plugin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ttrpc.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	api.RegisterPluginService(srv, p)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(context.Background(), l)
	}()
	conn, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := ttrpc.NewClient(conn, ttrpc.WithChainUnaryClientInterceptor(SendEncoded))
	t.Cleanup(func() {
		client.Close()
		srv.Close()
		<-served
	})
	return client
}

// TestCallPayload checks the way an encoding takes to a plugin: what
// Shared.Encode makes for CreateContainer requests and what
// EncodedSyncParts makes for a snapshot, sent with CallPayload through a
// ttrpc client with SendEncoded, are what a ttrpc server decodes: the
// requests themselves, and SplitSync's parts.
func TestCallPayload(t *testing.T) {
	plugin := &recordingPlugin{}
	client := servePlugin(t, plugin)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()

	pod := testPod(1)
	sh := NewShared(maxCreate)
	var sent []*api.CreateContainerRequest
	for i := range 3 {
		req := &api.CreateContainerRequest{Pod: pod, Container: bigCtr(i)}
		enc, buf, err := sh.Encode(req)
		if err != nil || enc == nil {
			t.Fatalf("Encode: %d bytes, %v", len(enc), err)
		}
		err = CallPayload(ctx, client, api.PluginServiceName, "CreateContainer", enc, &api.CreateContainerResponse{})
		buf.Free()
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, req)
	}

	pods, ctrs := snapshot(2, 40)
	parts := EncodedSyncParts(pods, ctrs, 8192)
	defer parts.Stop()
	for {
		req, _, ok, err := parts.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		enc, own := OwnEncoding(req)
		if !own {
			t.Fatal("a part of EncodedSyncParts is not its own encoding")
		}
		if err := CallPayload(ctx, client, api.PluginServiceName, "Synchronize", enc, &api.SynchronizeResponse{}); err != nil {
			t.Fatal(err)
		}
	}

	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	if len(plugin.creates) != len(sent) {
		t.Fatalf("the plugin decoded %d CreateContainer requests, want %d", len(plugin.creates), len(sent))
	}
	for i, req := range sent {
		if !proto.Equal(plugin.creates[i], req) {
			t.Errorf("CreateContainer %d: the plugin decoded another request", i)
		}
	}
	want := SplitSync(pods, ctrs, 8192)
	if len(want) < 2 || len(plugin.syncs) != len(want) {
		t.Fatalf("the plugin decoded %d Synchronize parts, SplitSync makes %d (want several)", len(plugin.syncs), len(want))
	}
	for i := range want {
		if !proto.Equal(plugin.syncs[i], want[i]) {
			t.Errorf("Synchronize part %d: the plugin decoded another request than SplitSync's", i)
		}
	}
}

// TestOwnEncoding checks which requests are sent as their own encoding:
// those holding unknown fields alone.
func TestOwnEncoding(t *testing.T) {
	own := &api.SynchronizeRequest{}
	own.ProtoReflect().SetUnknown([]byte{0x18, 0x01}) // more = true
	mixed := &api.SynchronizeRequest{More: true}
	mixed.ProtoReflect().SetUnknown([]byte{0x18, 0x01})
	var nilReq *api.SynchronizeRequest
	for _, tc := range []struct {
		name string
		req  proto.Message
		want bool
	}{
		{"unknown fields alone", own, true},
		{"known and unknown fields", mixed, false},
		{"known fields alone", &api.SynchronizeRequest{More: true}, false},
		{"empty", &api.SynchronizeRequest{}, false},
		{"nil", nilReq, false},
	} {
		if enc, ok := OwnEncoding(tc.req); ok != tc.want || (ok && len(enc) != 2) {
			t.Errorf("%s: OwnEncoding = %v, %v; want ok %v", tc.name, enc, ok, tc.want)
		}
	}
}
