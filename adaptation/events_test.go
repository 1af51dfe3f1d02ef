package adaptation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/validator"
	"google.golang.org/protobuf/proto"
)

// TestNotificationsAreConcurrent: a notification to three plugins that
// each take delay to answer returns in less than twice delay, where
// serial delivery takes at least three times delay. The delay is scaled
// to the machine's load (testscale), not the bound alone, so that the
// ratio, which is the proof, stays and a busy machine's overhead still
// fits below it.
func TestNotificationsAreConcurrent(t *testing.T) {
	delay := scaled(400 * time.Millisecond)
	args := helperArgs("stub", "-delay", delay.String(), "-delay-on", "PostStartContainer")
	rt := newTestRuntime(t, []testPlugin{{"10-a", args}, {"20-b", args}, {"30-c", args}})
	rt.start(t)
	start := time.Now()
	must(t, rt.a.PostStartContainer(ctxT(t), &api.PostStartContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}))
	took := time.Since(start)
	if took < delay || took >= 2*delay {
		t.Errorf("notification to 3 plugins delaying %v each took %v; want concurrent delivery (under %v; serial takes %v)", delay, took, 2*delay, 3*delay)
	}
	for _, p := range []string{"10-a", "20-b", "30-c"} {
		rt.logs.wait(t, "event", output(p, "EVENT PostStartContainer"))
		if got := rt.logs.lines(p, "EVENT PostStartContainer"); len(got) != 1 {
			t.Errorf("%s got %q", p, got)
		}
	}
}

// TestPerPluginOrder runs the lifecycle of many containers concurrently
// and checks that every plugin saw each container's events in order.
func TestPerPluginOrder(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-fast", helperArgs("stub")},
		{"20-slow", helperArgs("stub", "-delay", "2ms", "-delay-on", "PostCreateContainer,PostStartContainer,RemoveContainer")},
	})
	rt.start(t)
	ctx := ctxT(t)
	pod := testPod(0)
	must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctr := testCtr(0, i)
			_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
			check(t, err)
			check(t, rt.a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr}))
			check(t, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
			check(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr}))
			_, err = rt.a.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: &api.LinuxResources{}})
			check(t, err)
			check(t, rt.a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr}))
			_, err = rt.a.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
			check(t, err)
			check(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
		}()
	}
	wg.Wait()
	must(t, rt.a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}))
	must(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}))
	lifecycle := []string{"CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
		"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer"}
	for _, p := range []string{"10-fast", "20-slow"} {
		rt.logs.wait(t, "last event", output(p, "EVENT RemovePodSandbox"))
		perCtr := map[string][]string{}
		for _, line := range rt.logs.lines(p, "EVENT") {
			f := strings.Fields(line)
			if strings.HasSuffix(f[1], "Container") {
				perCtr[f[3]] = append(perCtr[f[3]], f[1])
			}
		}
		if len(perCtr) != 20 {
			t.Errorf("%s saw %d containers", p, len(perCtr))
		}
		for ctr, evs := range perCtr {
			if !slices.Equal(evs, lifecycle) {
				t.Errorf("%s saw %s: %v", p, ctr, evs)
			}
		}
	}
}

func TestLegacyPluginGetsStateChange(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-old", helperArgs("raw", "-behave", "legacy")}})
	rt.start(t)
	ctx := ctxT(t)
	pod, ctr := testPod(0), testCtr(0, 0)
	for range 2 {
		must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
		must(t, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
		must(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr}))
		must(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}))
	}
	want := []string{"STATECHANGE RunPodSandbox pod0 -", "STATECHANGE StartContainer pod0 ctr0",
		"STATECHANGE PostStartContainer pod0 ctr0", "STATECHANGE RemovePodSandbox pod0 -"}
	want = append(want, want...)
	rt.logs.waitN(t, len(want), "state changes", output("10-old", "STATECHANGE"))
	if got := rt.logs.lines("10-old", "STATECHANGE"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if warns := rt.logs.find(func(r logRecord) bool {
		return r.msg == "plugin does not implement a dedicated RPC, using StateChange"
	}); len(warns) != 4 {
		t.Errorf("%d deprecation warnings, want one per event", len(warns))
	}
}

func TestUnsolicitedUpdates(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-good", helperArgs("stub", "-env", "GOOD=1", "-events", "CreateContainer")},
		{"20-flood", helperArgs("stub", "-flood", "200", "-events", "CreateContainer")},
	})
	rt.store.FailUpdates()
	rt.start(t)
	createWorks(t, rt, 0, "GOOD=1")
	got := rt.logs.wait(t, "flood result", output("20-flood", "FLOOD done"))
	if got.msg != "FLOOD done failed=200 errors=0" {
		t.Errorf("plugin saw %q, want every update reported failed", got.msg)
	}
	if n := rt.store.UpdateCalls(); n != 200 {
		t.Errorf("UpdateFunc called %d times, want 200", n)
	}
	createWorks(t, rt, 1, "GOOD=1")
}

func TestSynchronizeUpdates(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-sync", helperArgs("stub", "-sync-update", "ctr7")}})
	rt.start(t)
	updates, _ := rt.store.Updates()
	if len(updates) != 1 || len(updates[0]) != 1 || updates[0][0].ContainerId != "ctr7" {
		t.Errorf("UpdateFunc got %v", updates)
	}
}

func TestHandover(t *testing.T) {
	rt := newTestRuntime(t, nil)
	rt.start(t)
	ctx := ctxT(t)
	startExternal(t, rt.logs, "old", helperArgs("stub", "-socket", rt.socket, "-name", "h", "-idx", "10",
		"-env", "V=old", "-delay", "500ms", "-delay-on", "CreateContainer"))
	rt.logs.wait(t, "old synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-h" })

	type result struct {
		rsp *api.CreateContainerResponse
		err error
	}
	inflight := make(chan result, 1)
	go func() {
		rsp, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		inflight <- result{rsp, err}
	}()
	rt.logs.wait(t, "request in flight", output("old", "EVENT CreateContainer"))
	startExternal(t, rt.logs, "new", helperArgs("stub", "-socket", rt.socket, "-name", "h", "-idx", "10", "-env", "V=new"))
	rt.logs.waitN(t, 2, "new synchronized", func(r logRecord) bool { return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-h" })

	r := <-inflight
	if r.err != nil || strings.Join(envOf(r.rsp.Adjust), ",") != "V=old" {
		t.Fatalf("request in flight during the handover: %v %v", r.rsp, r.err)
	}
	rt.logs.wait(t, "old shut down", output("old", "SHUTDOWN"))
	createWorks(t, rt, 1, "V=new")
	if ps := rt.a.Plugins(); len(ps) != 1 || ps[0].FullName() != "10-h" || ps[0].Kind != KindExternal {
		t.Errorf("plugins after handover: %+v", ps)
	}
}

func TestStop(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-a", helperArgs("stub")}, {"20-b", helperArgs("raw")}})
	rt.start(t)
	must(t, rt.a.Stop(ctxT(t)))
	for _, p := range []string{"10-a", "20-b"} {
		// Stop returns after reaping, when the output is collected.
		if got := rt.logs.lines(p, "SHUTDOWN"); len(got) != 1 {
			t.Errorf("%s: %q, want one SHUTDOWN", p, got)
		}
		if got := rt.logs.find(func(r logRecord) bool { return r.msg == "pre-installed plugin exited" && r.attrs["plugin"] == p }); len(got) != 1 {
			t.Errorf("%s not reaped", p)
		}
	}
	if ps := rt.a.Plugins(); len(ps) != 0 {
		t.Errorf("plugins after Stop: %v", ps)
	}
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); !errors.Is(err, ErrStopped) {
		t.Errorf("CreateContainer after Stop: %v", err)
	}
	if err := rt.a.RemoveContainer(ctxT(t), &api.RemoveContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err != nil {
		t.Errorf("notification after Stop: %v", err)
	}
}

func TestValidation(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-adj", helperArgs("stub", "-env", "A=1")},
		{"90-val", helperArgs("stub", "-events", "ValidateContainerAdjustment", "-reject", "no way")},
	})
	rt.start(t)
	_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v, want a *ValidationError", err)
	}
	if want := `validator "90-val" rejected the adjustment of container "ctr-0": no way`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	rt.logs.wait(t, "validation", output("90-val", "VALIDATE"))
	if got := rt.logs.lines("90-val", "VALIDATE"); len(got) != 1 || got[0] != "VALIDATE ctr0 pristine-env=BASE=1 adjusted-env=1 plugins=10-adj" {
		t.Errorf("validator saw %q", got)
	}
}

func TestDefaultValidator(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-adj", helperArgs("stub", "-env", "A=1")}},
		WithDefaultValidator(validator.Config{Enable: true, RequiredPlugins: []string{"20-needed"}}))
	rt.start(t)
	if p, ok := rt.plugin("00-default-validator"); !ok || p.Kind != KindBuiltin ||
		p.Events != api.Event_VALIDATE_CONTAINER_ADJUSTMENT.Mask() {
		t.Fatalf("default validator: %+v", p)
	}
	_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Validator != "00-default-validator" || !strings.Contains(verr.Reason, "20-needed") {
		t.Fatalf("error %v, want a rejection naming the missing plugin", err)
	}
}

// inproc is a builtin plugin adding an environment variable.
type inproc struct {
	unimplementedPlugin
	mu     sync.Mutex
	events []string
}

func (p *inproc) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_CREATE_CONTAINER, api.Event_REMOVE_CONTAINER))}, nil
}

func (p *inproc) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	return &api.SynchronizeResponse{More: req.More}, nil
}

func (p *inproc) Shutdown(context.Context, *api.Empty) (*api.Empty, error) { return &api.Empty{}, nil }

func (p *inproc) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.mu.Lock()
	p.events = append(p.events, "create "+req.Container.Id)
	p.mu.Unlock()
	return &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: "INPROC", Value: "1"}}}}, nil
}

func (p *inproc) RemoveContainer(_ context.Context, req *api.RemoveContainerRequest) (*api.RemoveContainerResponse, error) {
	p.mu.Lock()
	p.events = append(p.events, "remove "+req.Container.Id)
	p.mu.Unlock()
	return nil, fmt.Errorf("notification errors are only logged")
}

func TestBuiltinPlugin(t *testing.T) {
	svc := &inproc{}
	rt := newTestRuntime(t, []testPlugin{{"10-ext", helperArgs("stub", "-env", "EXT=1")}},
		WithBuiltinPlugin("05", "inproc", svc))
	rt.start(t)
	createWorks(t, rt, 0, "INPROC=1,EXT=1")
	must(t, rt.a.RemoveContainer(ctxT(t), &api.RemoveContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}))
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if !slices.Equal(svc.events, []string{"create ctr0", "remove ctr0"}) {
		t.Errorf("builtin saw %v", svc.events)
	}
	if p, ok := rt.plugin("05-inproc"); !ok || p.Kind != KindBuiltin || p.State != StateActive {
		t.Errorf("builtin plugin info %+v", p)
	}
}

func TestMetrics(t *testing.T) {
	// Two recorders: each is told all.
	reg, other := newCountingRecorder(), newCountingRecorder()
	rt := newTestRuntime(t, []testPlugin{{"10-m", helperArgs("stub", "-fail", "StartContainer")}},
		WithMetricsRecorder(reg), WithMetricsRecorder(other))
	rt.start(t)
	createWorks(t, rt, 0, "")
	if err := rt.a.StartContainer(ctxT(t), &api.StartContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err == nil {
		t.Fatal("StartContainer did not fail")
	}
	values := reg.values()
	for key, want := range map[string]float64{
		MetricRequests + "/10-m/Configure":             1,
		MetricRequests + "/10-m/Synchronize":           1,
		MetricRequests + "/10-m/CreateContainer":       1,
		MetricRequestSeconds + "/10-m/CreateContainer": 1,
		MetricErrors + "/10-m/StartContainer":          1,
		MetricPlugins + "//":                           1,
	} {
		if values[key] != want {
			t.Errorf("%s = %v, want %v", key, values[key], want)
		}
		if got := other.values()[key]; got != want {
			t.Errorf("second recorder: %s = %v, want %v", key, got, want)
		}
	}
	if _, ok := values[MetricErrors+"/10-m/CreateContainer"]; ok {
		t.Error("error counted for a successful request")
	}
}

func TestRestartLaunched(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{{"10-crashy", helperArgs("stub", "-crash", "CreateContainer")}},
		WithRestartLaunched(Backoff{Initial: 50 * time.Millisecond, Max: time.Second}))
	rt.start(t)
	createWorks(t, rt, 0, "")
	rt.logs.waitN(t, 2, "second launch", func(r logRecord) bool {
		return r.msg == "launched pre-installed plugin" && r.attrs["plugin"] == "10-crashy"
	})
	rt.logs.waitN(t, 2, "synchronized again", func(r logRecord) bool {
		return r.msg == "plugin synchronized" && r.attrs["plugin"] == "10-crashy"
	})
	if p, ok := rt.plugin("10-crashy"); !ok || p.State != StateActive {
		t.Errorf("restarted plugin: %+v", p)
	}
}

// scribbler is a builtin plugin that changes the request it is given
// before answering, and records the environment it saw.
type scribbler struct {
	inproc
	key string
	saw []string
}

func (p *scribbler) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.mu.Lock()
	p.saw = slices.Clone(req.Container.Env)
	p.mu.Unlock()
	req.Container.Env[0] = "SCRIBBLED=1"
	req.Container.Env = append(req.Container.Env, "MORE=1")
	req.Container.Args[0] = "/bin/false"
	req.Pod.Namespace = "scribbled"
	return &api.CreateContainerResponse{Adjust: &api.ContainerAdjustment{Env: []*api.KeyValue{{Key: p.key, Value: "1"}}}}, nil
}

// TestBuiltinCannotChangeTheRequest checks that a builtin plugin, which
// gets request objects rather than their encoding, changes neither the
// runtime's request nor what the next plugin sees by writing into its
// request.
func TestBuiltinCannotChangeTheRequest(t *testing.T) {
	first, second := &scribbler{key: "A"}, &scribbler{key: "B"}
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("05", "first", first), WithBuiltinPlugin("06", "second", second))
	rt.start(t)
	req := &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}
	want := api.Clone(req)
	rsp, err := rt.a.CreateContainer(ctxT(t), req)
	must(t, err)
	if got := strings.Join(envOf(rsp.Adjust), ","); got != "A=1,B=1" {
		t.Errorf("adjusted env %q, want A=1,B=1", got)
	}
	if !proto.Equal(req, want) {
		t.Errorf("the runtime's request changed:\n got %v\nwant %v", req, want)
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	if !slices.Equal(second.saw, []string{"BASE=1", "A=1"}) {
		t.Errorf("the second plugin saw env %q, want the first one's adjustment only", second.saw)
	}
}

// TestCreateContainerPodEncodedOnce checks that every plugin of a
// CreateContainer gets the whole pod and container, although the runtime
// encodes the pod only once and the container by hand.
func TestCreateContainerPodEncodedOnce(t *testing.T) {
	names := []string{"10-a", "20-b", "30-c"}
	var plugins []testPlugin
	for i, n := range names {
		plugins = append(plugins, testPlugin{n, helperArgs("stub", "-env", fmt.Sprintf("V%d=1", i))})
	}
	rt := newTestRuntime(t, plugins)
	rt.start(t)
	pod := testPod(0)
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Annotations = map[string]string{"note": "x"}
	pod.Linux = &api.LinuxPodSandbox{CgroupParent: "/kubepods", Resources: &api.LinuxResources{Memory: &api.LinuxMemory{Limit: api.Int64(1 << 30)}}}
	rt.store.AddPod(pod)
	ctr := testCtr(0, 0)
	ctr.Labels = map[string]string{"c": "1"}
	ctr.Annotations = map[string]string{"io.example/a": "b", "x": ""}
	ctr.Mounts = []*api.Mount{{Destination: "/data", Type: "bind", Source: "/srv", Options: []string{"rbind", "ro"}}}
	ctr.Linux = &api.LinuxContainer{CgroupsPath: "/kubepods/c", Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Cpus: "0-1"}}}
	ctr.Rlimits = []*api.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 10, Soft: 5}}
	ctr.State = api.ContainerState_CONTAINER_CREATED
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: api.Clone(ctr)})
	must(t, err)
	if got := strings.Join(envOf(rsp.Adjust), ","); got != "V0=1,V1=1,V2=1" {
		t.Errorf("merged env %q", got)
	}
	want := "PODDIGEST " + podDigest(pod)
	seen := api.Clone(ctr) // what plugin i sees: the variables of those before
	for i, n := range names {
		rt.logs.wait(t, "container digest", output(n, "CTRDIGEST"))
		if got := rt.logs.lines(n, "PODDIGEST"); len(got) != 1 || got[0] != want {
			t.Errorf("plugin %s got pod %q, want %q", n, got, want)
		}
		if got, want := rt.logs.lines(n, "CTRDIGEST"), "CTRDIGEST "+podDigest(seen); len(got) != 1 || got[0] != want {
			t.Errorf("plugin %s got container %q, want %q", n, got, want)
		}
		seen.Env = append(seen.Env, fmt.Sprintf("V%d=1", i))
	}
}
