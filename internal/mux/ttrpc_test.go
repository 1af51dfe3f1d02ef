package mux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/containerd/ttrpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	testPluginService  = "nrikit.test.Plugin"
	testRuntimeService = "nrikit.test.Runtime"
)

// echoService is a hand-written ttrpc service: Echo returns its
// BytesValue argument, Upper returns its StringValue argument with a prefix,
// and Ping takes and returns Empty.
func echoService(prefix string) *ttrpc.ServiceDesc {
	return &ttrpc.ServiceDesc{Methods: map[string]ttrpc.Method{
		"Echo": func(ctx context.Context, unmarshal func(any) error) (any, error) {
			var req wrapperspb.BytesValue
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return &req, nil
		},
		"Greet": func(ctx context.Context, unmarshal func(any) error) (any, error) {
			var req wrapperspb.StringValue
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return wrapperspb.String(prefix + req.Value), nil
		},
		"Ping": func(ctx context.Context, unmarshal func(any) error) (any, error) {
			var req emptypb.Empty
			if err := unmarshal(&req); err != nil {
				return nil, err
			}
			return &emptypb.Empty{}, nil
		},
	}}
}

// ttrpcServer serves desc as name on l until the returned stop function is
// called.
func ttrpcServer(tb testing.TB, l net.Listener, name string, desc *ttrpc.ServiceDesc) (stop func()) {
	tb.Helper()
	srv, err := ttrpc.NewServer()
	if err != nil {
		tb.Fatal(err)
	}
	srv.RegisterService(name, desc)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(context.Background(), l) }()
	return func() {
		srv.Close()
		if err := <-errc; err != nil && !errors.Is(err, ttrpc.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			tb.Errorf("Serve: %v", err)
		}
	}
}

func TestTTRPCOverMux(t *testing.T) {
	rt, pl := unixPair(t)
	mrt, mpl := newMux(t, rt), newMux(t, pl)

	// Conn 1: the plugin serves, the runtime calls.
	lpl, err := mpl.Listen(PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	stopPlugin := ttrpcServer(t, lpl, testPluginService, echoService("plugin: "))
	crt, err := mrt.Open(PluginServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	runtimeClient := ttrpc.NewClient(crt)

	// Conn 2: the runtime serves, the plugin calls.
	lrt, err := mrt.Listen(RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	stopRuntime := ttrpcServer(t, lrt, testRuntimeService, echoService("runtime: "))
	cpl, err := mpl.Open(RuntimeServiceConn)
	if err != nil {
		t.Fatal(err)
	}
	pluginClient := ttrpc.NewClient(cpl)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	call := func(c *ttrpc.Client, service string, i int) error {
		var resp wrapperspb.StringValue
		name := fmt.Sprintf("caller-%d", i)
		if err := c.Call(ctx, service, "Greet", wrapperspb.String(name), &resp); err != nil {
			return err
		}
		want := "plugin: " + name
		if service == testRuntimeService {
			want = "runtime: " + name
		}
		if resp.Value != want {
			return fmt.Errorf("%s.Greet = %q, want %q", service, resp.Value, want)
		}
		big := make([]byte, 1<<20) // a large message, still below ttrpc's 4 MiB limit
		for j := range big {
			big[j] = byte(i + j)
		}
		var echo wrapperspb.BytesValue
		if err := c.Call(ctx, service, "Echo", wrapperspb.Bytes(big), &echo); err != nil {
			return err
		}
		if !proto.Equal(&echo, wrapperspb.Bytes(big)) {
			return fmt.Errorf("%s.Echo returned other bytes", service)
		}
		return c.Call(ctx, service, "Ping", &emptypb.Empty{}, &emptypb.Empty{})
	}

	var wg sync.WaitGroup
	errc := make(chan error, 20)
	for i := 0; i < 5; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); errc <- call(runtimeClient, testPluginService, i) }()
		go func() { defer wg.Done(); errc <- call(pluginClient, testRuntimeService, i) }()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}

	// Unknown methods surface as ttrpc errors, not transport failures.
	if err := runtimeClient.Call(ctx, testPluginService, "Nope", &emptypb.Empty{}, &emptypb.Empty{}); err == nil {
		t.Error("call of unknown method succeeded")
	}
	if mrt.Err() != nil || mpl.Err() != nil {
		t.Fatalf("mux failed: %v / %v", mrt.Err(), mpl.Err())
	}

	// The plugin going away makes the runtime's calls fail, not hang.
	mpl.Close()
	if err := runtimeClient.Call(ctx, testPluginService, "Ping", &emptypb.Empty{}, &emptypb.Empty{}); err == nil {
		t.Error("call after peer shutdown succeeded")
	} else if ctx.Err() != nil {
		t.Errorf("call after peer shutdown hung until the timeout: %v", err)
	}

	runtimeClient.Close()
	pluginClient.Close()
	stopPlugin()
	stopRuntime()
}
