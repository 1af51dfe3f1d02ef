package adaptation

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
)

func bigCtr(i int) *api.Container {
	c := testCtr(i%100, i)
	c.Labels = map[string]string{"app": "benchmark", "tier": "backend", "index": fmt.Sprint(i)}
	c.Annotations = map[string]string{"io.kubernetes.container.hash": fmt.Sprintf("%08x", i)}
	c.Args = []string{"/usr/bin/server", "--port=8080", "--verbose"}
	c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "HOME=/root"}
	return c
}

func TestSynchronizeLarge(t *testing.T) {
	sizes := []int{10000}
	if !testing.Short() {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// The budget for the whole Synchronize is the tests' hang
			// guard, which scales with the machine's load: 100,000
			// containers are some 22 parts of 1 MiB, each encoded, sent
			// and decoded under the race detector (over the default
			// minute at a load of 24 on 2 cores).
			rt := newTestRuntime(t, []testPlugin{{"10-raw", helperArgs("raw")}},
				WithSynchronizeBudget(hangGuard))
			for i := range 100 {
				rt.store.AddPod(testPod(i))
			}
			for i := range n {
				rt.store.AddCtr(bigCtr(i))
			}
			start := time.Now()
			rt.start(t)
			t.Logf("%d containers synchronized in %v", n, time.Since(start))
			rt.logs.wait(t, "last part", func(r logRecord) bool {
				return output("10-raw", "SYNCPART")(r) && strings.Contains(r.msg, "more=false")
			})
			parts := rt.logs.lines("10-raw", "SYNCPART")
			var pods, ctrs int
			for i, line := range parts {
				var p, c, size int
				var more bool
				if _, err := fmt.Sscanf(line, "SYNCPART pods=%d containers=%d more=%t size=%d", &p, &c, &more, &size); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				pods, ctrs = pods+p, ctrs+c
				if size > MaxSyncMessageSize {
					t.Errorf("part %d is %d bytes", i, size)
				}
				if more != (i < len(parts)-1) {
					t.Errorf("part %d: more=%v of %d", i, more, len(parts))
				}
			}
			if pods != 100 || ctrs != n {
				t.Errorf("plugin got %d pods, %d containers", pods, ctrs)
			}
			if p, ok := rt.plugin("10-raw"); !ok || p.State != StateActive {
				t.Errorf("plugin not active: %+v", p)
			}
		})
	}
}

// TestSynchronizeConcurrentEvents runs pod and container creations and
// removals while a plugin synchronizes slowly, and checks that the plugin
// saw every object exactly once and a removal only for objects it saw.
func TestSynchronizeConcurrentEvents(t *testing.T) {
	rt := newTestRuntime(t, nil, WithSynchronizeTimeout(20*time.Second))
	for i := range 20 {
		rt.store.AddPod(testPod(i))
		rt.store.AddCtr(testCtr(i, i))
	}
	rt.start(t)
	ctx := ctxT(t)

	var (
		next    atomic.Int64
		stop    = make(chan struct{})
		workers sync.WaitGroup
		mu      sync.Mutex
		live    = map[string]bool{}
	)
	next.Store(1000)
	for i := range 20 {
		live[fmt.Sprintf("pod%d", i)] = true
		live[fmt.Sprintf("ctr%d", i)] = true
	}
	// removable holds the objects whose creation call returned: a
	// runtime removes nothing before.
	removable := map[string]bool{}
	for id := range live {
		removable[id] = true
	}
	created := func(id string) {
		mu.Lock()
		removable[id] = true
		mu.Unlock()
	}
	take := func(prefix string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for id := range removable {
			if strings.HasPrefix(id, prefix) {
				delete(removable, id)
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
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := int(next.Add(1))
				// The runtime's store changes a moment before the event
				// call, so snapshots fall in between.
				gap := func() { time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond) }
				switch r.IntN(4) {
				case 0: // new pod
					pod := testPod(n)
					rt.store.AddPod(pod)
					mu.Lock()
					live[pod.Id] = true
					mu.Unlock()
					gap()
					check(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
					created(pod.Id)
				case 1: // new container
					ctr := testCtr(0, n)
					rt.store.AddCtr(ctr)
					mu.Lock()
					live[ctr.Id] = true
					mu.Unlock()
					gap()
					if _, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: testPod(0), Container: ctr}); err != nil {
						t.Error(err)
						return
					}
					created(ctr.Id)
				case 2: // remove a container
					if id, ok := take("ctr"); ok {
						rt.store.DelCtr(id)
						gap()
						check(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: testPod(0), Container: &api.Container{Id: id}}))
					}
				case 3: // remove a pod
					if id, ok := take("pod"); ok {
						rt.store.DelPod(id)
						gap()
						check(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: &api.PodSandbox{Id: id}}))
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	startExternal(t, rt.logs, "slow", helperArgs("stub", "-socket", rt.socket, "-name", "slow", "-idx", "10",
		"-sync-delay", "1s", "-events", "pod,container"))
	rt.logs.wait(t, "synchronized", func(r logRecord) bool {
		return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-slow"
	})
	time.Sleep(100 * time.Millisecond) // keep the events going past the activation
	close(stop)
	workers.Wait()
	// Everything dispatched so far precedes this event in the plugin's queue.
	must(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: testPod(0), Container: &api.Container{Id: "sentinel"}}))
	rt.logs.wait(t, "sentinel", output("slow", "EVENT PostStartContainer pod0 sentinel"))

	seen := map[string]int{}
	removedUnseen := 0
	var during int
	for _, line := range rt.logs.lines("slow", "") {
		f := strings.Fields(line)
		switch {
		case f[0] == "SEEN":
			seen[f[2]]++
		case f[0] == "EVENT" && f[1] == "RunPodSandbox":
			seen[f[2]]++
			during++
		case f[0] == "EVENT" && f[1] == "CreateContainer":
			seen[f[3]]++
			during++
		case f[0] == "EVENT" && (f[1] == "RemovePodSandbox" || f[1] == "RemoveContainer"):
			id := f[2]
			if f[1] == "RemoveContainer" {
				id = f[3]
			}
			if seen[id] == 0 {
				removedUnseen++
				t.Errorf("removal of %s, which the plugin never saw", id)
			}
			seen[id] = -1000 // removed
			during++
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s seen %d times", id, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range live {
		if seen[id] != 1 {
			t.Errorf("live object %s: plugin's count %d, want 1", id, seen[id])
		}
	}
	for id, n := range seen {
		if n == 1 && !live[id] {
			t.Errorf("plugin believes %s exists; it was removed", id)
		}
	}
	filtered := rt.logs.find(func(r logRecord) bool { return r.msg == "event filtered for a plugin that synchronized" })
	t.Logf("%d live objects, %d events delivered after the snapshot, %d filtered", len(live), during, len(filtered))
}

// check reports err without stopping the test (for other goroutines).
func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}

// TestSynchronizeFiltersQueuedEvents places a creation and a removal
// exactly between the runtime's store change and its event call, around
// the snapshot of a synchronizing plugin.
func TestSynchronizeFiltersQueuedEvents(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"20-old", helperArgs("stub")}})
	rt.store.AddPod(testPod(0))
	rt.store.AddCtr(testCtr(0, 1))
	rt.start(t)
	ctx := ctxT(t)

	// In the store, events not called yet: the new plugin's snapshot
	// has pod 9 and lacks container 1.
	rt.store.AddPod(testPod(9))
	rt.store.DelCtr("ctr1")
	startExternal(t, rt.logs, "new", helperArgs("stub", "-socket", rt.socket, "-name", "new", "-idx", "10", "-sync-delay", "500ms"))
	rt.logs.wait(t, "snapshot", output("new", "SYNC"))
	// A notification does not wait for a synchronizing plugin; a
	// mutating event does, so it comes second.
	must(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)}))
	must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(9)}))
	// Created and removed after the snapshot: both delivered.
	rt.store.AddPod(testPod(10))
	must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: testPod(10)}))
	rt.store.DelPod("pod10")
	must(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: testPod(10)}))
	must(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: testPod(0), Container: &api.Container{Id: "sentinel"}}))
	rt.logs.wait(t, "sentinel", output("new", "EVENT PostStartContainer pod0 sentinel"))
	rt.logs.wait(t, "sentinel", output("20-old", "EVENT PostStartContainer pod0 sentinel"))

	if got := rt.logs.lines("new", "SEEN"); strings.Join(got, ";") != "SEEN pod pod0;SEEN pod pod9" &&
		strings.Join(got, ";") != "SEEN pod pod9;SEEN pod pod0" {
		t.Errorf("snapshot %q", got)
	}
	want := []string{"EVENT RunPodSandbox pod10 -", "EVENT RemovePodSandbox pod10 -", "EVENT PostStartContainer pod0 sentinel env="}
	if got := rt.logs.lines("new", "EVENT"); strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("new plugin got %q, want %q", got, want)
	}
	if got := rt.logs.lines("20-old", "EVENT"); len(got) != 5 {
		t.Errorf("active plugin got %q, want all 5 events", got)
	}
}
