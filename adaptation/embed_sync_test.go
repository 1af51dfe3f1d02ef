package adaptation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// lockedRuntime is a fake runtime with containerd's locking pattern: one
// lock held around every event call and the store change before it, in
// its SyncFunc while it lists and hands over its snapshot, and in its
// UpdateFunc.
type lockedRuntime struct {
	mu     sync.Mutex // the runtime's own NRI lock
	store  *runtimetest.Store
	a      *Adaptation
	logs   *logSink
	socket string
	// syncs counts the SyncFunc calls, updates the UpdateFunc calls.
	syncs, updates atomic.Int64
}

func newLockedRuntime(t *testing.T, opts ...Option) *lockedRuntime {
	t.Helper()
	root := shortTempDir(t)
	rt := &lockedRuntime{store: runtimetest.NewStore(), logs: newLogSink(t), socket: filepath.Join(root, "nri.sock")}
	sync := func(ctx context.Context, take SnapshotFunc) error {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rt.syncs.Add(1)
		pods, ctrs, err := rt.store.List(ctx)
		if err != nil {
			return err
		}
		return take(ctx, pods, ctrs)
	}
	update := func(ctx context.Context, u []*api.ContainerUpdate, e []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rt.updates.Add(1)
		return rt.store.Update(ctx, u, e)
	}
	base := []Option{
		WithSyncFunc(sync), WithPluginDir(filepath.Join(root, "none")), WithSocketPath(rt.socket),
		WithLogger(rt.logs.logger()), WithRegistrationTimeout(10 * time.Second), WithRequestTimeout(10 * time.Second),
		WithSynchronizeTimeout(20 * time.Second),
	}
	a, err := New("locked-runtime", "v1", nil, update, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rt.a = a
	stopAtCleanup(t, a, rt.logs)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return rt
}

// locked runs f under the runtime's lock, as containerd runs its event
// calls.
func (rt *lockedRuntime) locked(f func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	f()
}

// TestSyncFuncRuntimeLock guards against the deadlock of a runtime that
// holds its own lock around event calls and in its synchronization
// callback (containerd, CRI-O) while plugins register: with a ListFunc
// called under the Adaptation's lock that is a lock-order inversion. It
// creates and removes pods and containers from four goroutines, some
// under a PluginSyncBlock, while a plugin that asks for an update in its
// Synchronize answer (applied through the locking UpdateFunc) registers
// slowly, and checks that every object is seen exactly once.
func TestSyncFuncRuntimeLock(t *testing.T) {
	rt := newLockedRuntime(t)
	for i := range 10 {
		rt.store.AddPod(testPod(i))
		rt.store.AddCtr(testCtr(i, i))
	}
	ctx := ctxT(t)
	var (
		next    atomic.Int64
		stop    = make(chan struct{})
		workers sync.WaitGroup
		mu      sync.Mutex
		live    = map[string]bool{}
		order   []string // removable objects, oldest first
	)
	next.Store(1000)
	for i := range 10 {
		live[fmt.Sprintf("pod%d", i)] = true
		live[fmt.Sprintf("ctr%d", i)] = true
	}
	for i := 1; i < 10; i++ { // pod0 and ctr0 stay
		order = append(order, fmt.Sprintf("pod%d", i), fmt.Sprintf("ctr%d", i))
	}
	take := func(prefix string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i, id := range order {
			if strings.HasPrefix(id, prefix) {
				order = append(order[:i], order[i+1:]...)
				delete(live, id)
				return id, true
			}
		}
		return "", false
	}
	for w := range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Half the calls hold a block around the whole operation,
				// as containerd's CRI service does.
				var block *PluginSyncBlock
				if r.IntN(2) == 0 {
					block = rt.a.BlockPluginSync()
				}
				n := int(next.Add(1))
				switch r.IntN(4) {
				case 0:
					pod := testPod(n)
					rt.locked(func() {
						rt.store.AddPod(pod)
						check(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
					})
					mu.Lock()
					live[pod.Id], order = true, append(order, pod.Id)
					mu.Unlock()
				case 1:
					ctr := testCtr(0, n)
					rt.locked(func() {
						rt.store.AddCtr(ctr)
						_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: testPod(0), Container: ctr})
						check(t, err)
					})
					mu.Lock()
					live[ctr.Id], order = true, append(order, ctr.Id)
					mu.Unlock()
				case 2:
					if id, ok := take("ctr"); ok {
						rt.locked(func() {
							rt.store.DelCtr(id)
							check(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: testPod(0), Container: &api.Container{Id: id}}))
						})
					}
				case 3:
					if id, ok := take("pod"); ok {
						rt.locked(func() {
							rt.store.DelPod(id)
							check(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: &api.PodSandbox{Id: id}}))
						})
					}
				}
				block.Unblock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	startExternal(t, rt.logs, "slow", helperArgs("stub", "-socket", rt.socket, "-name", "slow", "-idx", "10",
		"-sync-delay", "500ms", "-sync-update", "ctr0", "-events", "pod,container"))
	rt.logs.wait(t, "synchronized", func(r logRecord) bool {
		return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-slow"
	})
	time.Sleep(200 * time.Millisecond) // keep the events going past the activation
	close(stop)
	finished := make(chan struct{})
	go func() { workers.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(hangGuard):
		t.Fatal("event calls under the runtime's lock did not finish: deadlock")
	}
	rt.locked(func() {
		must(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: testPod(0), Container: &api.Container{Id: "sentinel"}}))
	})
	rt.logs.wait(t, "sentinel", output("slow", "EVENT PostStartContainer pod0 sentinel"))
	// Once to tell the external plugin's container (identify), once to
	// synchronize it.
	if n := rt.syncs.Load(); n != 2 {
		t.Errorf("SyncFunc called %d times, want 2", n)
	}
	deadline := time.Now().Add(hangGuard)
	for rt.updates.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if rt.updates.Load() == 0 {
		t.Error("the update asked for in Synchronize was not applied")
	}
	mu.Lock()
	defer mu.Unlock()
	checkSeenOnce(t, rt.logs.lines("slow", ""), live)
}

// checkSeenOnce checks a stub plugin's output (SEEN lines of its
// Synchronize, EVENT lines) against the objects that exist: each exactly
// once, nothing removed that it never saw.
func checkSeenOnce(t *testing.T, lines []string, live map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	events := 0
	defer func() { t.Logf("%d live objects, %d creation and removal events", len(live), events) }()
	for _, line := range lines {
		f := strings.Fields(line)
		switch {
		case len(f) < 3:
		case f[0] == "SEEN":
			seen[f[2]]++
		case f[0] == "EVENT" && f[1] == "RunPodSandbox":
			seen[f[2]]++
			events++
		case f[0] == "EVENT" && f[1] == "CreateContainer" && len(f) > 3:
			seen[f[3]]++
			events++
		case f[0] == "EVENT" && (f[1] == "RemovePodSandbox" || f[1] == "RemoveContainer"):
			events++
			id := f[2]
			if f[1] == "RemoveContainer" && len(f) > 3 {
				id = f[3]
			}
			if seen[id] == 0 {
				t.Errorf("removal of %s, which the plugin never saw", id)
			}
			seen[id] = -1000
		}
	}
	for id, n := range seen {
		switch {
		case n > 1:
			t.Errorf("%s seen %d times", id, n)
		case n == 1 && !live[id]:
			t.Errorf("plugin believes %s exists; it was removed", id)
		}
	}
	for id := range live {
		if seen[id] != 1 {
			t.Errorf("live object %s: plugin's count %d, want 1", id, seen[id])
		}
	}
}

// TestSyncGate: a snapshot waits for the runtime's blocks, bounded; a
// block waits for a waiting snapshot.
func TestSyncGate(t *testing.T) {
	ctx := ctxT(t)
	var g syncGate
	if !g.block(ctx) {
		t.Fatal("block refused")
	}
	if _, err := g.lock(ctx, 50*time.Millisecond); !errors.Is(err, ErrSyncBlocked) {
		t.Fatalf("lock under a block: %v, want ErrSyncBlocked", err)
	}
	locked := make(chan func(), 1)
	go func() {
		release, err := g.lock(ctx, hangGuard)
		check(t, err)
		locked <- release
	}()
	// Wait until the snapshot is waiting, then a new block must wait.
	for {
		g.mu.Lock()
		w := g.waiting
		g.mu.Unlock()
		if w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	blocked := make(chan bool, 1)
	bctx, cancel := context.WithCancel(ctx)
	go func() { blocked <- g.block(bctx) }()
	select {
	case <-blocked:
		t.Fatal("a block was taken while a snapshot waited")
	case <-time.After(50 * time.Millisecond):
	}
	g.unblock()
	var release func()
	select {
	case release = <-locked:
	case <-time.After(hangGuard):
		t.Fatal("snapshot not taken after the block was released")
	}
	release()
	select {
	case ok := <-blocked:
		if !ok {
			t.Fatal("block refused after the snapshot")
		}
	case <-time.After(hangGuard):
		t.Fatal("block not taken after the snapshot")
	}
	cancel()
	g.unblock()
	if _, err := g.lock(ctx, time.Second); err != nil {
		t.Fatalf("lock with no block: %v", err)
	}
}

// TestNewSyncFuncOrListFunc: exactly one of ListFunc and SyncFunc.
func TestNewSyncFuncOrListFunc(t *testing.T) {
	store := runtimetest.NewStore()
	sync := WithSyncFunc(func(context.Context, SnapshotFunc) error { return nil })
	if _, err := New("r", "v", nil, store.Update); err == nil {
		t.Error("New without ListFunc or SyncFunc succeeded")
	}
	if _, err := New("r", "v", store.List, store.Update, sync); err == nil {
		t.Error("New with ListFunc and SyncFunc succeeded")
	}
	if _, err := New("r", "v", nil, store.Update, sync); err != nil {
		t.Errorf("New with a SyncFunc: %v", err)
	}
}

// recorded is a MetricsRecorder and DeprecationRecorder that remembers.
type recorded struct {
	mu     sync.Mutex
	calls  []Call
	counts []int
	warns  []string
}

func (r *recorded) RecordCall(_ context.Context, c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorded) RecordPluginCount(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = append(r.counts, n)
}

func (r *recorded) PluginWarning(_ context.Context, d Deprecation, plugin, details string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warns = append(r.warns, d.String()+" "+plugin+" "+details)
}

// TestRecorders: the metrics recorder sees calls and plugin counts, the
// deprecation recorder what deprecatedStateChange reports.
func TestRecorders(t *testing.T) {
	rec := &recorded{}
	rt := newLockedRuntime(t, WithMetricsRecorder(rec), WithDeprecationRecorder(rec))
	startExternal(t, rt.logs, "one", helperArgs("stub", "-socket", rt.socket, "-name", "one", "-idx", "10", "-events", "pod"))
	rt.logs.wait(t, "synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" })
	ctx := ctxT(t)
	rt.locked(func() { must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(1)})) })
	rt.a.deprecatedStateChange(ctx, "10-one", api.Event_RUN_POD_SANDBOX)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 1 || rec.calls[0].Plugin != "10-one" || rec.calls[0].Event != api.Event_RUN_POD_SANDBOX {
		t.Errorf("recorded calls %+v, want one RunPodSandbox to 10-one", rec.calls)
	}
	if len(rec.counts) == 0 || rec.counts[len(rec.counts)-1] != 1 {
		t.Errorf("recorded plugin counts %v, want the last 1", rec.counts)
	}
	want := "deprecated StateChange 10-one does not implement a dedicated RunPodSandbox RPC call"
	if len(rec.warns) != 1 || rec.warns[0] != want {
		t.Errorf("deprecations %q, want %q", rec.warns, want)
	}
}

// TestWithSnapshotMisuse: a SyncFunc that hands over no snapshot, two, or
// one after returning (having given up on the runtime's lock) fails the
// registration and inserts nothing late.
func TestWithSnapshotMisuse(t *testing.T) {
	var (
		late    = make(chan SnapshotFunc, 1)
		inserts atomic.Int64
	)
	cases := map[string]SyncFunc{
		"none": func(context.Context, SnapshotFunc) error { return nil },
		"twice": func(ctx context.Context, take SnapshotFunc) error {
			if err := take(ctx, nil, nil); err != nil {
				return err
			}
			return take(ctx, nil, nil)
		},
		"late": func(_ context.Context, take SnapshotFunc) error {
			late <- take
			return errors.New("gave up waiting for the runtime's lock")
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := New("r", "v", nil, runtimetest.NewStore().Update, WithSyncFunc(f))
			if err != nil {
				t.Fatal(err)
			}
			insert := func([]*api.PodSandbox, []*api.Container) error { inserts.Add(1); return nil }
			if err := a.withSnapshot(&plugin{full: "10-p"}, insert); err == nil {
				t.Error("withSnapshot succeeded")
			}
		})
	}
	take := <-late
	if err := take(context.Background(), nil, nil); !errors.Is(err, errSnapshotLate) {
		t.Errorf("late take: %v, want errSnapshotLate", err)
	}
	if n := inserts.Load(); n != 1 { // the first take of "twice"
		t.Errorf("%d insertions, want 1", n)
	}
}
