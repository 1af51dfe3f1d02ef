package stub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/stub/stubtest"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// onClosePlugin is CRI-O's test/nri plugin pattern: its OnClose hook stops
// the plugin, through the same sync.Once as the test's own Stop, which
// waits for the stub (Stop, then Wait).
type onClosePlugin struct {
	stub   stub.Stub
	once   sync.Once
	closed chan struct{}
}

func (p *onClosePlugin) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

func (p *onClosePlugin) stop() {
	p.once.Do(func() {
		p.stub.Stop()
		p.stub.Wait()
	})
}

func (p *onClosePlugin) onClose() {
	close(p.closed)
	p.stop()
}

// TestStopWithStoppingOnCloseHook: Stop returns although the OnClose hook
// it triggers waits for that same Stop to finish, and the hook runs.
func TestStopWithStoppingOnCloseHook(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	p := &onClosePlugin{closed: make(chan struct{})}
	s, err := stub.New(p, stub.WithPluginName("hook"), stub.WithPluginIdx("10"),
		stub.WithDialer(rt.Dial), stub.WithOnClose(p.onClose))
	if err != nil {
		t.Fatal(err)
	}
	p.stub = s
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { p.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return within 10s: it waits for an OnClose hook that waits for it")
	}
	select {
	case <-p.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the OnClose hook was not called after Stop")
	}
}
