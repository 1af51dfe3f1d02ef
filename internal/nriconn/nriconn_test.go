package nriconn

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/api"
)

type runtimeService struct {
	got chan *api.RegisterPluginRequest
}

func (r *runtimeService) RegisterPlugin(_ context.Context, req *api.RegisterPluginRequest) (*api.Empty, error) {
	r.got <- req
	return &api.Empty{}, nil
}

func (r *runtimeService) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return &api.UpdateContainersResponse{}, nil
}

type pluginService struct {
	api.PluginService // unimplemented methods panic; only Configure is called
}

func (pluginService) Configure(_ context.Context, req *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: req.GetSupportedEvents()}, nil
}

// TestLayouts connects a runtime-side and a plugin-side layout and calls
// each side's service from the other, which only works if the two agree on
// which connection carries which service.
func TestLayouts(t *testing.T) {
	a, b := net.Pipe()
	rt, err := New(a, RuntimeRole, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Mux.Close()
	pl, err := New(b, PluginRole, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Mux.Close()

	rs := &runtimeService{got: make(chan *api.RegisterPluginRequest, 1)}
	api.RegisterRuntimeService(rt.Server, rs)
	api.RegisterPluginService(pl.Server, pluginService{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go rt.Server.Serve(ctx, rt.Listener)
	go pl.Server.Serve(ctx, pl.Listener)

	runtimeClient := api.NewRuntimeClient(ttrpc.NewClient(pl.ClientConn))
	if _, err := runtimeClient.RegisterPlugin(ctx, &api.RegisterPluginRequest{PluginName: "x", PluginIdx: "10"}); err != nil {
		t.Fatalf("plugin → runtime call: %v", err)
	}
	if got := <-rs.got; got.GetPluginName() != "x" {
		t.Fatalf("runtime got %v", got)
	}
	pluginClient := api.NewPluginClient(ttrpc.NewClient(rt.ClientConn))
	rsp, err := pluginClient.Configure(ctx, &api.ConfigureRequest{SupportedEvents: 0x8})
	if err != nil || rsp.GetEvents() != 0x8 {
		t.Fatalf("runtime → plugin call: %v, %v", rsp, err)
	}
}

// TestEndedBeforeSetUp: New on a connection whose peer has closed it
// either sets the layout up or fails with an error wrapping ErrEnded,
// whichever of the multiplexer's reader and New's Listen and Open sees
// the end first. Open fails as soon as the reader has recorded the end,
// a moment before the multiplexer's Err reports it; that order used to
// give an error without ErrEnded. It is rare (under -race, about one
// set-up in 10,000 hit it), so many connections are tried.
func TestEndedBeforeSetUp(t *testing.T) {
	const tries = 10000
	failed := 0
	for i := range tries {
		a, b := net.Pipe()
		b.Close()
		lay, err := New(a, RuntimeRole, nil)
		if err == nil {
			lay.Mux.Close()
			continue
		}
		failed++
		if !errors.Is(err, ErrEnded) || !errors.Is(err, io.EOF) {
			t.Fatalf("connection %d: New = %v, want an error wrapping ErrEnded and io.EOF", i, err)
		}
	}
	t.Logf("%d of %d set-ups saw the end", failed, tries)
}
