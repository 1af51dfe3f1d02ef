package conformance

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/ttrpc"
	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/mux"
)

func TestCheckRuntimeNrikitAdaptation(t *testing.T) {
	ctx := testContext(t)
	path := shortSocketPath(t)
	w := newWorld()
	list := func(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		return w.pods, w.containers, nil
	}
	update := func(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		return nil, nil
	}
	a, err := adaptation.New("test-runtime", "v1.0.0", list, update,
		adaptation.WithSocketPath(path), adaptation.WithPluginDir(t.TempDir()), adaptation.WithConfigDir(t.TempDir()))
	if err != nil {
		t.Fatalf("adaptation.New: %v", err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()

	r, err := CheckRuntime(ctx, path, RuntimeConfig{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	requireAllPassed(t, r)
	if res := requireCheck(t, r, CheckRuntimeSynchronize); !strings.Contains(res.Reason, "4 pods, 4 containers") {
		t.Errorf("Synchronize reason %q: want the runtime's 4 pods and 4 containers", res.Reason)
	}
	if res := requireCheck(t, r, CheckRuntimeSupported); !strings.Contains(res.Reason, "advertised") || strings.Contains(res.Reason, "not advertised") {
		t.Errorf("supported events reason %q: nrikit's runtime advertises its events", res.Reason)
	}
	if res := requireCheck(t, r, CheckRuntimeUnknownEvent); !strings.Contains(res.Reason, "InvalidArgument") {
		t.Errorf("unknown event rejection %q: want InvalidArgument", res.Reason)
	}
}

// sloppyRuntime is a hand-written runtime that answers every RegisterPlugin
// at once and successfully, configures the plugin with a zero request
// timeout and never synchronizes it.
type sloppyRuntime struct {
	l    net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	muxs []*mux.Mux
}

func startSloppyRuntime(t *testing.T) string {
	t.Helper()
	path := shortSocketPath(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	rt := &sloppyRuntime{l: l}
	rt.wg.Add(1)
	go rt.accept(t)
	t.Cleanup(func() {
		l.Close()
		rt.mu.Lock()
		for _, m := range rt.muxs {
			m.Close()
		}
		rt.mu.Unlock()
		rt.wg.Wait()
	})
	return path
}

func (rt *sloppyRuntime) accept(t *testing.T) {
	defer rt.wg.Done()
	for {
		conn, err := rt.l.Accept()
		if err != nil {
			return
		}
		m, err := mux.New(conn)
		if err != nil {
			t.Errorf("mux: %v", err)
			return
		}
		rt.mu.Lock()
		rt.muxs = append(rt.muxs, m)
		rt.mu.Unlock()
		pc, err := m.Open(mux.PluginServiceConn)
		if err != nil {
			t.Errorf("open: %v", err)
			return
		}
		l, err := m.Listen(mux.RuntimeServiceConn)
		if err != nil {
			t.Errorf("listen: %v", err)
			return
		}
		srv, err := ttrpc.NewServer()
		if err != nil {
			t.Errorf("server: %v", err)
			return
		}
		client := ttrpc.NewClient(pc)
		api.RegisterRuntimeService(srv, &sloppyService{plugin: api.NewPluginClient(client), done: m.Done()})
		rt.wg.Add(2)
		go func() {
			defer rt.wg.Done()
			_ = srv.Serve(context.Background(), l)
		}()
		go func() {
			defer rt.wg.Done()
			<-m.Done()
			srv.Close()
			client.Close()
		}()
	}
}

type sloppyService struct {
	plugin api.PluginService
	done   <-chan struct{}
}

func (s *sloppyService) RegisterPlugin(context.Context, *api.RegisterPluginRequest) (*api.Empty, error) {
	// Like upstream: answer first, configure afterwards.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, _ = s.plugin.Configure(ctx, &api.ConfigureRequest{RuntimeName: "sloppy", RegistrationTimeout: 5000})
	}()
	return &api.Empty{}, nil
}

func (s *sloppyService) UpdateContainers(context.Context, *api.UpdateContainersRequest) (*api.UpdateContainersResponse, error) {
	return nil, errors.New("not supported")
}

func TestCheckRuntimeSloppyRuntime(t *testing.T) {
	path := startSloppyRuntime(t)
	r, err := CheckRuntime(testContext(t), path, RuntimeConfig{Timeout: time.Second})
	if err != nil {
		t.Fatalf("CheckRuntime: %v", err)
	}
	if !r.Failed() {
		t.Fatalf("report did not fail:\n%s", renderText(t, r))
	}
	for name, want := range map[string]struct {
		passed bool
		reason string
	}{
		CheckRuntimeRegisters:    {true, "registered as 99-nri-conformance"},
		CheckRuntimeConfigure:    {false, "request_timeout 0 ms"},
		CheckRuntimeSupported:    {true, "not advertised"},
		CheckRuntimeSynchronize:  {false, "no Synchronize within 1s"},
		CheckRuntimeInvalidName:  {false, "RegisterPlugin succeeded"},
		CheckRuntimeUnknownEvent: {false, "RegisterPlugin succeeded"},
	} {
		res := requireCheck(t, r, name)
		if res.Passed != want.passed || !strings.Contains(res.Reason, want.reason) {
			t.Errorf("%s: passed=%t reason %q, want passed=%t and a reason mentioning %q", name, res.Passed, res.Reason, want.passed, want.reason)
		}
	}
}

func TestCheckRuntimeNoSocket(t *testing.T) {
	if _, err := CheckRuntime(testContext(t), shortSocketPath(t), RuntimeConfig{}); err == nil {
		t.Fatal("CheckRuntime succeeded without a runtime")
	}
	if _, err := CheckRuntime(testContext(t), "/nonexistent", RuntimeConfig{Name: "bad"}); err == nil {
		t.Fatal("CheckRuntime accepted the checker name \"bad\"")
	}
}
