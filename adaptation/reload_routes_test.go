package adaptation

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
)

// answering is a builtin plugin that fails the request when its answer
// is refused, and answers CreateContainer with the updates and evictions
// of other containers the test sets.
type answering struct {
	unimplementedPlugin
	mu     sync.Mutex
	update []*api.ContainerUpdate
	evict  []*api.ContainerEviction
	told   []string
}

func (p *answering) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_CREATE_CONTAINER)),
		FailurePolicy: &api.FailurePolicy{FailRequest: true}}, nil
}

func (p *answering) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.More}, nil
}

func (p *answering) Shutdown(context.Context, *api.Empty) (*api.Empty, error) {
	return &api.Empty{}, nil
}

func (p *answering) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.told = append(p.told, req.GetContainer().GetId())
	return &api.CreateContainerResponse{Update: p.update, Evict: p.evict}, nil
}

// answer sets the updates and evictions of the next answers.
func (p *answering) answer(update []*api.ContainerUpdate, evict ...*api.ContainerEviction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.update, p.evict = update, evict
}

// toldOf reports whether the plugin was sent CreateContainer for id.
func (p *answering) toldOf(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.told {
		if t == id {
			return true
		}
	}
	return false
}

// reloadRuntime is what TestRouteReloadAnswers drives: an Adaptation
// with a ListFunc or a SyncFunc around a store, and how to call its events.
type reloadRuntime struct {
	a     *Adaptation
	store *runtimetest.Store
	run   func(func())
}

// eachRuntime runs f as a subtest with a ListFunc runtime and with a
// SyncFunc one (locked), which newReloadRuntime makes.
func eachRuntime(t *testing.T, f func(t *testing.T, locked bool)) {
	for _, locked := range []bool{false, true} {
		name := "ListFunc"
		if locked {
			name = "SyncFunc"
		}
		t.Run(name, func(t *testing.T) { f(t, locked) })
	}
}

// newReloadRuntime returns a started runtime with opts: one with a
// ListFunc, or one with a SyncFunc (locked) whose events are called
// under its lock.
func newReloadRuntime(t *testing.T, locked bool, opts ...Option) reloadRuntime {
	t.Helper()
	if locked {
		lrt := newLockedRuntime(t, opts...)
		return reloadRuntime{a: lrt.a, store: lrt.store, run: lrt.locked}
	}
	trt := newTestRuntime(t, nil, opts...)
	trt.start(t)
	return reloadRuntime{a: trt.a, store: trt.store, run: func(f func()) { f() }}
}

// create adds ctr of pod to the runtime and calls CreateContainer.
func (rt reloadRuntime) create(t *testing.T, pod *api.PodSandbox, ctr *api.Container) (*api.CreateContainerResponse, error) {
	t.Helper()
	rt.store.AddCtr(ctr)
	var (
		rsp *api.CreateContainerResponse
		err error
	)
	rt.run(func() {
		rsp, err = rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: ctr})
	})
	return rsp, err
}

// runPod adds pod to the runtime and calls RunPodSandbox.
func (rt reloadRuntime) runPod(t *testing.T, pod *api.PodSandbox) {
	t.Helper()
	rt.store.AddPod(pod)
	rt.run(func() { must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: pod})) })
}

// updatedIDs returns the IDs of the containers updates name.
func updatedIDs(updates []*api.ContainerUpdate) string {
	var ids []string
	for _, u := range updates {
		ids = append(ids, u.GetContainerId())
	}
	return strings.Join(ids, ",")
}

// wantDenied checks that err is the plugin's failure of the request,
// refused by its grant, naming the where.
func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	var perr *PluginError
	if !errors.As(err, &perr) || perr.Kind != FailureDenied || !strings.Contains(err.Error(), "outside the grant's where") {
		t.Errorf("%s: %v, want the plugin's answer refused for a container outside the grant's where", what, err)
	}
}

// TestRouteReloadAnswers: after a reload narrows a plugin's where, the
// updates and evictions of containers other than the event's in its
// answers to events are checked against the new where at once, not once
// it reconnects: those of containers outside it are refused (the
// plugin's failure of the request), those within it still apply, and so
// for containers and pods created after the reload (route "reload", in
// answers). With a ListFunc and with a SyncFunc, which the runtime's
// lock guards.
func TestRouteReloadAnswers(t *testing.T) {
	eachRuntime(t, func(t *testing.T, locked bool) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writePolicy(t, path, wherePolicy("gpu-*, ml-*"))
		plugin := &answering{}
		rt := newReloadRuntime(t, locked, WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
			WithBuiltinPlugin("10", "gpu", plugin))
		gpu, ml := testPod(1), testPod(2)
		gpu.Namespace, ml.Namespace = "gpu-jobs", "ml-jobs"
		rt.runPod(t, gpu)
		rt.runPod(t, ml)
		_, err := rt.create(t, gpu, testCtr(1, 1))
		must(t, err)
		_, err = rt.create(t, ml, testCtr(2, 2))
		must(t, err)
		plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr2", 2)})
		rsp, err := rt.create(t, gpu, testCtr(1, 3))
		must(t, err)
		if got := updatedIDs(rsp.GetUpdate()); got != "ctr2" {
			t.Fatalf("before the reload: updates of %q, want ctr2", got)
		}

		writePolicy(t, path, wherePolicy("gpu-*"))
		must(t, rt.a.ReloadPolicy())
		_, err = rt.create(t, gpu, testCtr(1, 4))
		wantDenied(t, "update of ctr2 after the reload", err)
		plugin.answer(nil, &api.ContainerEviction{ContainerId: "ctr2"})
		_, err = rt.create(t, gpu, testCtr(1, 5))
		wantDenied(t, "eviction of ctr2 after the reload", err)
		plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr1", 3)})
		rsp, err = rt.create(t, gpu, testCtr(1, 6))
		must(t, err)
		if got := updatedIDs(rsp.GetUpdate()); got != "ctr1" {
			t.Errorf("update of ctr1, within the new where: updates of %q, want ctr1", got)
		}

		// Created after the reload: a container outside the new
		// where (of which the plugin is not told), and a pod and
		// container within it.
		_, err = rt.create(t, ml, testCtr(2, 7))
		must(t, err)
		if plugin.toldOf("ctr7") {
			t.Error("the plugin was told of ctr7, outside its new where")
		}
		fresh := testPod(3)
		fresh.Namespace = "gpu-new"
		rt.runPod(t, fresh)
		_, err = rt.create(t, fresh, testCtr(3, 8))
		must(t, err)
		plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr7", 4)})
		_, err = rt.create(t, gpu, testCtr(1, 9))
		wantDenied(t, "update of ctr7, created outside the new where after the reload", err)
		plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr8", 5)})
		rsp, err = rt.create(t, gpu, testCtr(1, 10))
		must(t, err)
		if got := updatedIDs(rsp.GetUpdate()); got != "ctr8" {
			t.Errorf("update of ctr8, created within the new where after the reload: updates of %q, want ctr8", got)
		}
	})
}

// newBreakableRuntime returns a started runtime with a ListFunc that
// fails while failList is set, plugin as 10-gpu, and the policy file at
// path granting it wherePolicy("gpu-*, ml-*"), reloaded only when the
// test says so.
func newBreakableRuntime(t *testing.T, plugin *answering) (rt reloadRuntime, path string, failList *atomic.Bool, logs *logSink) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, path, wherePolicy("gpu-*, ml-*"))
	store := runtimetest.NewStore()
	failList = &atomic.Bool{}
	list := func(ctx context.Context) ([]*api.PodSandbox, []*api.Container, error) {
		if failList.Load() {
			return nil, nil, errors.New("the runtime's list is broken")
		}
		return store.List(ctx)
	}
	logs = newLogSink(t)
	a, err := New("test-runtime", "v1", list, store.Update, WithDisabledExternalConnections(),
		WithPluginDir(filepath.Join(shortTempDir(t), "none")), WithLogger(logs.logger()),
		WithPolicyFile(path), WithPolicyReloadInterval(time.Hour), WithBuiltinPlugin("10", "gpu", plugin))
	must(t, err)
	stopAtCleanup(t, a, logs)
	must(t, a.Start(ctxT(t)))
	return reloadRuntime{a: a, store: store, run: func(f func()) { f() }}, path, failList, logs
}

// TestReloadWhereUnlisted: a reload that changes a plugin's where while
// the runtime's containers cannot be listed applies all the same, and
// the updates of containers other than the event's in the plugin's
// answers, which cannot be checked against it, are refused
// (WhereUncheckedError) until they can: the plugin's UpdateContainers
// lists them again, and from then on they are checked.
func TestReloadWhereUnlisted(t *testing.T) {
	plugin := &answering{}
	rt, path, failList, logs := newBreakableRuntime(t, plugin)
	a := rt.a
	gpu, ml := testPod(1), testPod(2)
	gpu.Namespace, ml.Namespace = "gpu-jobs", "ml-jobs"
	rt.runPod(t, gpu)
	rt.runPod(t, ml)
	for i, pod := range []*api.PodSandbox{gpu, ml} {
		_, err := rt.create(t, pod, testCtr(i+1, i+1))
		must(t, err)
	}

	failList.Store(true)
	writePolicy(t, path, wherePolicy("gpu-*"))
	must(t, a.ReloadPolicy())
	logs.wait(t, "the failure to list", func(r logRecord) bool {
		return strings.HasPrefix(r.msg, "cannot list the runtime's containers") && strings.Contains(r.attrs["error"], "broken")
	})
	if w := a.findPlugin(t, "10-gpu").grant.Load().where.String(); w != `namespaces=["gpu-*"]` {
		t.Fatalf("where after the reload: %s, want the new one", w)
	}
	plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr1", 1)})
	_, err := rt.create(t, gpu, testCtr(1, 3))
	var uerr *WhereUncheckedError
	if !errors.As(err, &uerr) || uerr.Container != "ctr1" || uerr.Action != "update" {
		t.Errorf("update of ctr1 with the list broken: %v, want a WhereUncheckedError", err)
	}

	failList.Store(false)
	p := a.findPlugin(t, "10-gpu")
	up, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
		Update: []*api.ContainerUpdate{cpuUpdate("ctr1", 2), cpuUpdate("ctr2", 3)}})
	must(t, err)
	if got := updatedIDs(up.GetFailed()); got != "ctr2" {
		t.Errorf("UpdateContainers once listed: failed %q, want ctr2", got)
	}
	rsp, err := rt.create(t, gpu, testCtr(1, 4))
	must(t, err)
	if got := updatedIDs(rsp.GetUpdate()); got != "ctr1" {
		t.Errorf("update of ctr1 once listed: updates of %q, want ctr1", got)
	}
	plugin.answer([]*api.ContainerUpdate{cpuUpdate("ctr2", 4)})
	_, err = rt.create(t, gpu, testCtr(1, 5))
	wantDenied(t, "update of ctr2 once listed", err)
}

// TestWhereIndexKept: the policy watcher builds the where index a reload
// could not (the runtime's list was broken), and drops it once no
// plugin's where differs from its scope records' at two looks in a row.
func TestWhereIndexKept(t *testing.T) {
	rt, path, failList, _ := newBreakableRuntime(t, &answering{})
	a := rt.a
	look := func() {
		a.reloadMu.Lock()
		defer a.reloadMu.Unlock()
		a.keepWhereIndex()
	}

	failList.Store(true)
	writePolicy(t, path, wherePolicy("gpu-*"))
	must(t, a.ReloadPolicy())
	if a.objects.Load() != nil {
		t.Fatal("a where index after a reload that could not list the runtime's containers")
	}
	look()
	if a.objects.Load() != nil {
		t.Fatal("a where index built while the list is broken")
	}
	failList.Store(false)
	look()
	if a.readyWhereIndex() == nil {
		t.Fatal("the watcher did not build the where index once the list works")
	}

	writePolicy(t, path, wherePolicy("gpu-*, ml-*")) // the where the plugin registered with
	must(t, a.ReloadPolicy())
	look()
	if a.objects.Load() == nil {
		t.Fatal("the where index dropped at the first look that found it unneeded")
	}
	look()
	if a.objects.Load() != nil {
		t.Error("the where index kept after two looks that found it unneeded")
	}
}

// TestWhereIndexRaces: containers created and removed while reloads
// change a plugin's where (the where index built, dropped and built
// again) end in an index that holds exactly the runtime's containers:
// none missed between the taking of the list and the events, none
// brought back after its removal. With a ListFunc and with a SyncFunc,
// which the runtime's lock guards.
func TestWhereIndexRaces(t *testing.T) {
	eachRuntime(t, func(t *testing.T, locked bool) {
		path := filepath.Join(t.TempDir(), "policy.yaml")
		writePolicy(t, path, wherePolicy("default"))
		rt := newReloadRuntime(t, locked, WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
			WithBuiltinPlugin("10", "gpu", &answering{}))
		store := rt.store
		pod := testPod(0)
		rt.runPod(t, pod)
		var (
			wg   sync.WaitGroup
			stop atomic.Bool
		)
		for w := range 2 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					ctr := testCtr(0, 1000*w+i%50)
					if i%2 == 1 {
						store.DelCtr(ctr.Id) // dropped before its removal event, as the contract says
						rt.run(func() {
							must(t, rt.a.RemoveContainer(ctxT(t), &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
						})
						continue
					}
					_, err := rt.create(t, pod, ctr)
					must(t, err)
				}
			})
		}
		for i := range 20 {
			writePolicy(t, path, wherePolicy([]string{"other", "default"}[i%2]))
			must(t, rt.a.ReloadPolicy())
			rt.a.reloadMu.Lock()
			rt.a.keepWhereIndex()
			rt.a.keepWhereIndex()
			rt.a.reloadMu.Unlock()
		}
		writePolicy(t, path, wherePolicy("other"))
		must(t, rt.a.ReloadPolicy())
		for i := range 10 { // after the last list for sure
			ctr := testCtr(0, 5000+i)
			_, err := rt.create(t, pod, ctr)
			must(t, err)
			if i%2 == 1 {
				store.DelCtr(ctr.Id)
				rt.run(func() {
					must(t, rt.a.RemoveContainer(ctxT(t), &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
				})
			}
		}
		stop.Store(true)
		wg.Wait()

		ix := rt.a.readyWhereIndex()
		if ix == nil {
			t.Fatal("no where index after a reload that changed the where")
		}
		_, ctrs, err := store.List(ctxT(t))
		must(t, err)
		want := map[string]bool{}
		for _, c := range ctrs {
			want[c.GetId()] = true
		}
		ix.mu.Lock()
		defer ix.mu.Unlock()
		for id := range want {
			if ix.ctrs[id] == nil {
				t.Errorf("container %s missing from the where index", id)
			}
		}
		for id := range ix.ctrs {
			if !want[id] {
				t.Errorf("container %s, removed, still in the where index", id)
			}
		}
	})
}

// TestWhereIndexFill: the runtime's list taken in by the where index
// keeps what events noted since the index was made: a container created
// since stays, one removed since does not come back with a list taken
// before its removal.
func TestWhereIndexFill(t *testing.T) {
	pod := testPod(0)
	ix := newWhereIndex()
	if _, _, err := ix.lookup("10-gpu", "update", "ctr1"); err == nil {
		t.Error("an index not yet filled found a container")
	}
	ix.note(api.Event_CREATE_CONTAINER, about(pod, testCtr(0, 3)))
	ix.note(api.Event_REMOVE_CONTAINER, about(pod, testCtr(0, 2)))
	ix.fill([]*api.PodSandbox{pod}, []*api.Container{testCtr(0, 1), testCtr(0, 2)})
	for id, want := range map[string]bool{"ctr1": true, "ctr2": false, "ctr3": true, "ctr4": false} {
		gotPod, ctr, err := ix.lookup("10-gpu", "update", id)
		must(t, err)
		if (ctr != nil) != want || (want && gotPod != pod) {
			t.Errorf("%s: pod %v, container %v, want it listed: %v", id, gotPod, ctr, want)
		}
	}
	ix.note(api.Event_REMOVE_CONTAINER, about(pod, testCtr(0, 1)))
	if _, ctr, _ := ix.lookup("10-gpu", "update", "ctr1"); ctr != nil {
		t.Error("ctr1 still listed after its removal")
	}
}
