package adaptation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

// wait bounds every wait of these tests.
const wait = 30 * time.Second

// fakeContainerd keeps its pods and containers under one lock, which it
// holds around every event call, in its SyncFn and in its UpdateFn, and
// while it calls Stop: containerd's internal/nri pattern.
type fakeContainerd struct {
	sync.Mutex
	nri     *Adaptation
	pods    map[string]*PodSandbox
	ctrs    map[string]*Container
	updates atomic.Int64
}

func (f *fakeContainerd) sync(ctx context.Context, cb SyncCB) error {
	f.Lock()
	defer f.Unlock()
	var (
		pods []*PodSandbox
		ctrs []*Container
	)
	for _, p := range f.pods {
		pods = append(pods, p)
	}
	for _, c := range f.ctrs {
		ctrs = append(ctrs, c)
	}
	updates, err := cb(ctx, pods, ctrs)
	if err != nil {
		return err
	}
	if len(updates) > 0 {
		return fmt.Errorf("SyncCB returned %d updates, want none (they go through UpdateFn)", len(updates))
	}
	return nil
}

func (f *fakeContainerd) update(_ context.Context, u []*ContainerUpdate) ([]*ContainerUpdate, error) {
	f.Lock()
	defer f.Unlock()
	f.updates.Add(int64(len(u)))
	return nil, nil
}

// counter is a plugin that counts what it sees and asks for an update of
// ctr0 in its Synchronize answer.
type counter struct {
	mu      sync.Mutex
	seen    map[string]int
	synced  chan struct{}
	created atomic.Int64
}

func (c *counter) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ctr := range ctrs {
		c.seen[ctr.Id]++
	}
	close(c.synced)
	return []*api.ContainerUpdate{{ContainerId: "ctr0"}}, nil
}

func (c *counter) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[ctr.Id]++
	c.created.Add(1)
	return &api.ContainerAdjustment{Annotations: map[string]string{"seen-by": "counter"}}, nil, nil
}

// TestContainerdLockPattern runs containerd's use of the API: creations
// under the runtime's lock from several goroutines while a plugin
// registers, a sync callback and an update callback that take the same
// lock, and Stop called with the lock held. Nothing may deadlock, every
// container must reach the plugin exactly once, and the plugin's
// Synchronize update must be applied through UpdateFn.
func TestContainerdLockPattern(t *testing.T) {
	dir, err := os.MkdirTemp("", "nri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "nri.sock")
	f := &fakeContainerd{pods: map[string]*PodSandbox{}, ctrs: map[string]*Container{}}
	pod := &PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"}
	f.pods[pod.Id] = pod
	f.ctrs["ctr0"] = &Container{Id: "ctr0", PodSandboxId: "pod0", Name: "ctr0"}
	f.nri, err = New("fake-containerd", "v2", f.sync, f.update,
		WithSocketPath(socket), WithPluginPath(filepath.Join(dir, "none")),
		WithDefaultValidator(&DefaultValidatorConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nri.Start(); err != nil {
		t.Fatal(err)
	}

	var (
		stop    = make(chan struct{})
		workers sync.WaitGroup
		next    atomic.Int64
	)
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctr := &Container{Id: fmt.Sprintf("ctr%d", next.Add(1)), PodSandboxId: "pod0"}
				func() {
					defer f.nri.BlockPluginSync().Unblock()
					f.Lock()
					defer f.Unlock()
					f.ctrs[ctr.Id] = ctr
					ctx, cancel := context.WithTimeout(context.Background(), wait)
					defer cancel()
					if _, err := f.nri.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
						t.Error(err)
					}
				}()
				time.Sleep(time.Millisecond)
			}
		}()
	}

	plugin := &counter{seen: map[string]int{}, synced: make(chan struct{})}
	s, err := stub.New(plugin, stub.WithSocketPath(socket), stub.WithPluginName("counter"), stub.WithPluginIdx("10"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-plugin.synced:
	case <-time.After(wait):
		t.Fatal("plugin not synchronized")
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("creations under the runtime's lock did not finish: deadlock")
	}
	for deadline := time.Now().Add(wait); f.updates.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if f.updates.Load() == 0 {
		t.Error("the update asked for in Synchronize was not applied through UpdateFn")
	}

	// containerd's Stop holds its lock.
	stopped := make(chan struct{})
	go func() {
		f.Lock()
		defer f.Unlock()
		f.nri.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("Stop under the runtime's lock did not return")
	}
	s.Stop()

	plugin.mu.Lock()
	defer plugin.mu.Unlock()
	f.Lock()
	defer f.Unlock()
	for id := range f.ctrs {
		if plugin.seen[id] != 1 {
			t.Errorf("container %s seen %d times, want 1", id, plugin.seen[id])
		}
	}
	t.Logf("%d containers, %d created during the test", len(f.ctrs), plugin.created.Load())
}
