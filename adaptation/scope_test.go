package adaptation

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/filter"
	"github.com/nrikit/nrikit/filter/celscope"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/validator"
)

// The semantics of docs/scope.md, one test each, with plugin processes.

// scopeArg renders scope for the helper plugin's -scope flag.
func scopeArg(t testing.TB, scope *api.PluginScope) string {
	t.Helper()
	buf, err := json.Marshal(scope)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf)
}

var gpuScope = &api.PluginScope{PodLabelSelector: "accel=gpu"}

func labelled(p *api.PodSandbox, accel string) *api.PodSandbox {
	p.Labels = map[string]string{"accel": accel}
	return p
}

func gpuPod(i int) *api.PodSandbox { return labelled(testPod(i), "gpu") }
func cpuPod(i int) *api.PodSandbox { return labelled(testPod(i), "cpu") }

// lifecycle runs every event of a pod with one container, in the order
// a runtime calls them, and returns the names of the events called and
// the CreateContainer answer.
func lifecycle(t *testing.T, rt *testRuntime, pod *api.PodSandbox, ctr *api.Container) ([]string, *api.CreateContainerResponse) {
	t.Helper()
	ctx := ctxT(t)
	var called []string
	step := func(e api.Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		called = append(called, e.Name())
	}
	step(api.Event_RUN_POD_SANDBOX, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
	_, err := rt.a.UpdatePodSandbox(ctx, &api.UpdatePodSandboxRequest{Pod: pod})
	step(api.Event_UPDATE_POD_SANDBOX, err)
	step(api.Event_POST_UPDATE_POD_SANDBOX, rt.a.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: pod}))
	rsp, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	step(api.Event_CREATE_CONTAINER, err)
	step(api.Event_POST_CREATE_CONTAINER, rt.a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr}))
	step(api.Event_START_CONTAINER, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
	step(api.Event_POST_START_CONTAINER, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: pod, Container: ctr}))
	_, err = rt.a.UpdateContainer(ctx, &api.UpdateContainerRequest{Pod: pod, Container: ctr, LinuxResources: &api.LinuxResources{}})
	step(api.Event_UPDATE_CONTAINER, err)
	step(api.Event_POST_UPDATE_CONTAINER, rt.a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: pod, Container: ctr}))
	_, err = rt.a.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
	step(api.Event_STOP_CONTAINER, err)
	step(api.Event_REMOVE_CONTAINER, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
	step(api.Event_STOP_POD_SANDBOX, rt.a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: pod}))
	step(api.Event_REMOVE_POD_SANDBOX, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}))
	return called, rsp
}

// mentions reports whether any of the output lines of plugin names one
// of ids (as a whole word).
func mentions(rt *testRuntime, plugin string, ids ...string) []string {
	var hits []string
	for _, line := range rt.logs.lines(plugin, "") {
		for _, f := range strings.Fields(line) {
			if slices.Contains(ids, f) {
				hits = append(hits, line)
				break
			}
		}
	}
	return hits
}

// eventsOf returns the event names the plugin reported for object id.
func eventsOf(rt *testRuntime, plugin, id string) []string {
	var evs []string
	for _, line := range rt.logs.lines(plugin, "EVENT ") {
		f := strings.Fields(line)
		if len(f) >= 4 && (f[2] == id || f[3] == id) {
			evs = append(evs, f[1])
		}
	}
	return evs
}

// tracked returns the sizes of a registered plugin's scope records.
func (rt *testRuntime) tracked(t testing.TB, full string) (pods, ctrs int) {
	t.Helper()
	rt.a.mu.Lock()
	p := rt.a.findLocked(full)
	rt.a.mu.Unlock()
	if p == nil {
		t.Fatalf("plugin %s not registered", full)
	}
	return p.track.size()
}

// TestScopeGPUEnv is the motivating example: a plugin injecting an
// environment variable into GPU pods only is never called for a CPU pod
// or its containers, not even in Synchronize.
func TestScopeGPUEnv(t *testing.T) {
	reg := newCountingRecorder()
	rt := newTestRuntime(t, []testPlugin{
		{"10-gpu", helperArgs("stub", "-scope", scopeArg(t, gpuScope), "-env", "GPU=1")},
	}, WithMetricsRecorder(reg))
	// Existing before the plugin registers: sent in Synchronize.
	rt.store.AddPod(gpuPod(0))
	rt.store.AddCtr(testCtr(0, 0))
	rt.store.AddPod(cpuPod(1))
	rt.store.AddCtr(testCtr(1, 1))
	rt.start(t)

	if got := rt.logs.wait(t, "Synchronize", output("10-gpu", "SYNC")).msg; got != "SYNC pods=1 containers=1" {
		t.Errorf("plugin got %q, want only the GPU pod and its container", got)
	}
	if got, want := rt.logs.lines("10-gpu", "SEEN"), []string{"SEEN pod pod0", "SEEN container ctr0"}; !slices.Equal(got, want) {
		t.Errorf("synchronized %q, want %q", got, want)
	}

	cpuEvents, cpuRsp := lifecycle(t, rt, cpuPod(3), testCtr(3, 3))
	gpuEvents, gpuRsp := lifecycle(t, rt, gpuPod(2), testCtr(2, 2))
	if got := envOf(gpuRsp.Adjust); !slices.Equal(got, []string{"GPU=1"}) {
		t.Errorf("GPU container adjusted with %q, want GPU=1", got)
	}
	if got := envOf(cpuRsp.Adjust); len(got) != 0 {
		t.Errorf("CPU container adjusted with %q", got)
	}
	// The plugin handles its events in order: once it reported the GPU
	// pod's removal, it reported everything it was sent before.
	rt.logs.wait(t, "GPU pod removed", output("10-gpu", "EVENT RemovePodSandbox pod2"))
	if hits := mentions(rt, "10-gpu", "pod1", "ctr1", "pod3", "ctr3"); len(hits) > 0 {
		t.Errorf("plugin saw CPU objects: %q", hits)
	}
	var gpuSeen []string
	for _, line := range rt.logs.lines("10-gpu", "EVENT ") {
		gpuSeen = append(gpuSeen, strings.Fields(line)[1])
	}
	if !slices.Equal(gpuSeen, gpuEvents) {
		t.Errorf("plugin saw %q for the GPU pod, want %q", gpuSeen, gpuEvents)
	}

	info, _ := rt.plugin("10-gpu")
	want, err := filter.Compile(gpuScope)
	must(t, err)
	if info.Scope != want.String() || info.Filtered != uint64(len(cpuEvents)) || info.OptedOut != 0 {
		t.Errorf("plugin info scope=%q filtered=%d opted-out=%d, want %q, %d, 0",
			info.Scope, info.Filtered, info.OptedOut, want.String(), len(cpuEvents))
	}
	values := reg.values()
	for _, e := range cpuEvents {
		if got := values[MetricFiltered+"/10-gpu/"+e]; got != 1 {
			t.Errorf("%s for %s = %v, want 1", MetricFiltered, e, got)
		}
	}
	if got := values[MetricRequests+"/10-gpu/CreateContainer"]; got != 1 {
		t.Errorf("%d CreateContainer requests sent, want 1", int(got))
	}
	rt.logs.wait(t, "effective scope logged", func(r logRecord) bool {
		return r.msg == "plugin configured" && r.attrs["plugin"] == "10-gpu" && r.attrs["scope"] == want.String()
	})
	if pods, ctrs := rt.tracked(t, "10-gpu"); pods != 1 || ctrs != 1 {
		t.Errorf("plugin has %d pod and %d container records, want the synchronized ones only", pods, ctrs)
	}
}

// TestScopeRegistrationErrors: a scope that does not compile refuses the
// registration, with the reason.
func TestScopeRegistrationErrors(t *testing.T) {
	cases := map[string]*api.PluginScope{
		"10-selector": {PodLabelSelector: "accel in (gpu"},
		"11-cel":      {Cel: `pod.labelz["accel"] == "gpu"`},
		"12-glob":     {Images: []string{"registry.io/[gpu"}},
		"13-regex": {ContainerAnnotations: []*api.AnnotationMatch{
			{Key: "profile", Op: api.AnnotationMatch_REGEX, Value: "gpu-("}}},
	}
	var plugins []testPlugin
	for full, scope := range cases {
		plugins = append(plugins, testPlugin{full, helperArgs("stub", "-scope", scopeArg(t, scope))})
	}
	plugins = append(plugins, testPlugin{"20-good", helperArgs("stub", "-scope", scopeArg(t, gpuScope), "-env", "GOOD=1")})
	rt := newTestRuntime(t, plugins, WithCEL(celscope.Compile))
	rt.start(t)
	cfg := config{cel: celscope.Compile}
	for full, scope := range cases {
		_, cerr := cfg.compileScope(scope)
		if cerr == nil {
			t.Fatalf("%s: scope compiles", full)
		}
		want := `plugin "` + full + `" declared an invalid scope: ` + strings.TrimPrefix(cerr.Error(), "filter: ")
		rt.logs.wait(t, "refusal of "+full, func(r logRecord) bool {
			return r.msg == "plugin registration failed" && r.attrs["error"] == want
		})
		// The plugin prints the first line of a multi-line message on
		// the REGISTER line.
		first, _, _ := strings.Cut(want, "\n")
		got := rt.logs.wait(t, "plugin's answer", output(full, "REGISTER"))
		if !strings.Contains(got.msg, "InvalidArgument") || !strings.HasSuffix(got.msg, first) {
			t.Errorf("%s got %q, want InvalidArgument and %q", full, got.msg, want)
		}
		if _, ok := rt.plugin(full); ok {
			t.Errorf("%s registered", full)
		}
	}
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: gpuPod(0), Container: testCtr(0, 0)})
	if err != nil || !slices.Equal(envOf(rsp.Adjust), []string{"GOOD=1"}) {
		t.Errorf("valid plugin: %v %v", rsp, err)
	}

	_, err = New("rt", "v1", runtimetest.NewStore().List, runtimetest.NewStore().Update,
		WithPluginOverride("10-x", PluginPolicy{Scope: &api.PluginScope{Namespaces: []string{""}}}))
	if err == nil || !strings.Contains(err.Error(), `plugin override "10-x": invalid scope: namespaces:`) {
		t.Errorf("New with an invalid administrator's scope: %v", err)
	}
}

// TestAdminScope: the administrator's scope applies to plugins that
// declare none (here one speaking upstream's protocol) and is combined
// with the plugin's own.
func TestAdminScope(t *testing.T) {
	admin := &api.PluginScope{Namespaces: []string{"ml-*"}}
	rt := newTestRuntime(t, []testPlugin{
		{"10-upstream", helperArgs("raw")},
		{"20-both", helperArgs("stub", "-scope", scopeArg(t, gpuScope))},
		{"30-all", helperArgs("stub")},
	}, WithPluginOverride("10-upstream", PluginPolicy{Scope: admin}),
		WithPluginOverride("20-both", PluginPolicy{Scope: admin}))
	rt.start(t)
	pod := func(i int, ns, accel string) *api.PodSandbox {
		p := labelled(testPod(i), accel)
		p.Namespace = ns
		return p
	}
	pods := []*api.PodSandbox{pod(0, "ml-a", "gpu"), pod(1, "ml-b", "cpu"), pod(2, "default", "gpu"),
		pod(3, "default", "cpu"), pod(4, "ml-c", "gpu")}
	for _, p := range pods {
		must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: p}))
	}
	for plugin, want := range map[string][]string{
		"10-upstream": {"pod0", "pod1", "pod4"},
		"20-both":     {"pod0", "pod4"},
		"30-all":      {"pod0", "pod1", "pod2", "pod3", "pod4"},
	} {
		// pod4 is in every scope: once a plugin reported it, it
		// reported everything it was sent before.
		rt.logs.wait(t, "barrier", output(plugin, "EVENT RunPodSandbox pod4"))
		var got []string
		for _, line := range rt.logs.lines(plugin, "EVENT RunPodSandbox") {
			got = append(got, strings.Fields(line)[2])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s saw %q, want %q", plugin, got, want)
		}
	}
	adminF, err := filter.Compile(admin)
	must(t, err)
	ownF, err := filter.Compile(gpuScope)
	must(t, err)
	for plugin, want := range map[string]string{
		"10-upstream": adminF.String(),
		"20-both":     filter.And(adminF, ownF).String(),
		"30-all":      "all",
	} {
		if info, _ := rt.plugin(plugin); info.Scope != want {
			t.Errorf("%s has scope %q, want %q", plugin, info.Scope, want)
		}
	}
}

// TestScopeDecidedAtCreation: whether an object is in a plugin's scope is
// decided once, when it is created (or synchronized); Stop and Remove
// events reach a plugin only for the objects it saw.
func TestScopeDecidedAtCreation(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-cel", helperArgs("stub", "-scope", scopeArg(t, &api.PluginScope{Cel: `"GPU" in container.env`}))},
	}, WithCEL(celscope.Compile))
	rt.start(t)
	ctx := ctxT(t)
	pod := testPod(0)
	must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
	// ctr0 is created without GPU; later events show it with GPU=1 (as
	// if a plugin had added it): it stays outside the scope.
	ctr0, ctr1 := testCtr(0, 0), testCtr(0, 1)
	ctr1.Env = append(ctr1.Env, "GPU=1")
	for _, ctr := range []*api.Container{ctr0, ctr1} {
		_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
		must(t, err)
	}
	ctr0 = testCtr(0, 0)
	ctr0.Env = append(ctr0.Env, "GPU=1")
	for _, ctr := range []*api.Container{ctr0, ctr1} {
		must(t, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
		_, err := rt.a.StopContainer(ctx, &api.StopContainerRequest{Pod: pod, Container: ctr})
		must(t, err)
		must(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
	}
	must(t, rt.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: pod}))
	rt.logs.wait(t, "pod removed", output("10-cel", "EVENT RemovePodSandbox pod0"))
	if got := eventsOf(rt, "10-cel", "ctr0"); len(got) != 0 {
		t.Errorf("plugin saw %q for a container created outside its scope", got)
	}
	want := []string{"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer"}
	if got := eventsOf(rt, "10-cel", "ctr1"); !slices.Equal(got, want) {
		t.Errorf("plugin saw %q for a container in its scope, want %q", got, want)
	}
	if pods, ctrs := rt.tracked(t, "10-cel"); pods != 0 || ctrs != 0 {
		t.Errorf("%d pod and %d container records left after removal", pods, ctrs)
	}
}

// TestScopeLimitsChanges: a plugin may update and evict only containers
// in its scope, on its own and in its answers.
func TestScopeLimitsChanges(t *testing.T) {
	scope := scopeArg(t, gpuScope)
	t.Run("UpdateContainers", func(t *testing.T) {
		rt := newTestRuntime(t, []testPlugin{
			{"10-upd", helperArgs("stub", "-scope", scope, "-unsolicited", "update:ctr0,update:ctr1")},
			{"20-evict", helperArgs("stub", "-scope", scope, "-unsolicited", "update:ctr0,evict:ctr1")},
		})
		rt.start(t)
		ctx := ctxT(t)
		gpu, cpu := gpuPod(0), cpuPod(1)
		for i, p := range []*api.PodSandbox{gpu, cpu} {
			must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: p}))
			_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: p, Container: testCtr(i, i)})
			must(t, err)
		}
		must(t, rt.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: gpu, Container: testCtr(0, 0)}))
		if got := rt.logs.wait(t, "answer", output("10-upd", "UNSOLICITED")).msg; got != "UNSOLICITED failed=ctr1 err=none" {
			t.Errorf("10-upd got %q, want ctr1 failed", got)
		}
		got := rt.logs.wait(t, "answer", output("20-evict", "UNSOLICITED")).msg
		want := (&ScopeError{Plugin: "20-evict", Action: "evict", Container: "ctr1"}).Error()
		if !strings.Contains(got, "InvalidArgument") || !strings.Contains(got, want) {
			t.Errorf("20-evict got %q, want InvalidArgument and %q", got, want)
		}
		updates, evictions := rt.store.Updates()
		if len(updates) != 1 || len(updates[0]) != 1 || updates[0][0].ContainerId != "ctr0" ||
			len(evictions[0]) != 0 {
			t.Errorf("runtime asked to apply %v, evict %v; want ctr0 updated only", updates, evictions)
		}
	})
	t.Run("answers", func(t *testing.T) {
		rt := newTestRuntime(t, []testPlugin{
			{"10-create", helperArgs("stub", "-scope", scope, "-create-update", "ctr1", "-sync-update", "ctr1")},
		})
		rt.store.AddPod(cpuPod(1))
		rt.store.AddCtr(testCtr(1, 1))
		rt.start(t)
		rt.logs.wait(t, "refused Synchronize update", func(r logRecord) bool {
			return r.msg == "refusing plugin's updates of containers outside its scope" && r.attrs["containers"] == "ctr1"
		})
		if n := rt.store.UpdateCalls(); n != 0 {
			t.Errorf("%d updates applied from Synchronize", n)
		}
		ctx := ctxT(t)
		_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: gpuPod(0), Container: testCtr(0, 0)})
		var serr *ScopeError
		var perr *PluginError
		if !errors.As(err, &perr) || perr.Plugin != "10-create" || !errors.As(err, &serr) ||
			serr.Container != "ctr1" || serr.Action != "update" {
			t.Fatalf("CreateContainer: %v, want a *PluginError wrapping a *ScopeError", err)
		}
		if want := `plugin "10-create" failed CreateContainer: cannot update container "ctr1": it is outside the scope of plugin "10-create"`; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		// A container outside the plugin's scope is not affected.
		if _, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: cpuPod(2), Container: testCtr(2, 2)}); err != nil {
			t.Errorf("CreateContainer of a CPU container: %v", err)
		}
	})
}

// TestScopedFailureIsolation: a plugin's failure, timeout or crash never
// affects a pod or container outside its scope, whatever its failure
// policy; nor does a required plugin's absence.
func TestScopedFailureIsolation(t *testing.T) {
	const timeout = 2 * time.Second
	scope := scopeArg(t, gpuScope)
	t.Run("hanging fail_request plugin", func(t *testing.T) {
		rt := newTestRuntime(t, []testPlugin{
			{"10-hang", helperArgs("stub", "-scope", scope, "-hang", "CreateContainer", "-fail-request", "-keep-connected")},
		}, WithRequestTimeout(timeout))
		rt.start(t)
		for i := range 3 {
			start := time.Now()
			lifecycle(t, rt, cpuPod(i), testCtr(i, i))
			if took := time.Since(start); took >= timeout {
				t.Errorf("a CPU pod's lifecycle took %v, the plugin's timeout is %v", took, timeout)
			}
		}
		_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: gpuPod(9), Container: testCtr(9, 9)})
		var perr *PluginError
		if !errors.As(err, &perr) || perr.Kind != FailureTimeout {
			t.Fatalf("GPU container: %v, want a timeout", err)
		}
		lifecycle(t, rt, cpuPod(5), testCtr(5, 5))
		if hits := mentions(rt, "10-hang", "pod0", "pod1", "pod2", "pod5"); len(hits) > 0 {
			t.Errorf("plugin saw CPU pods: %q", hits)
		}
	})
	t.Run("crashing required plugin", func(t *testing.T) {
		rt := newTestRuntime(t, []testPlugin{
			{"10-crash", helperArgs("stub", "-scope", scope, "-crash", "CreateContainer")},
		}, WithPluginOverride("10-crash", PluginPolicy{Required: true}),
			WithPluginOverride("50-absent", PluginPolicy{Required: true, Scope: &api.PluginScope{Namespaces: []string{"ml"}}}))
		rt.start(t)
		create := func(pod *api.PodSandbox, i int) error {
			_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: testCtr(i, i)})
			return err
		}
		must(t, create(cpuPod(0), 0))
		var rerr *RequiredPluginError
		if err := create(gpuPod(1), 1); !errors.As(err, &rerr) || rerr.Plugin != "10-crash" {
			t.Fatalf("GPU container with the plugin crashing: %v", err)
		}
		rt.waitGone(t, "10-crash")
		// Outside the scope the plugin last registered with: not missing.
		must(t, create(cpuPod(2), 2))
		if err := create(gpuPod(3), 3); !errors.As(err, &rerr) || rerr.Plugin != "10-crash" {
			t.Fatalf("GPU container without the plugin: %v", err)
		}
		// Never registered: the administrator's scope decides.
		ml := gpuPod(4)
		ml.Namespace = "ml"
		ml.Labels = nil
		if err := create(ml, 4); !errors.As(err, &rerr) || rerr.Plugin != "50-absent" {
			t.Fatalf("container in the absent plugin's scope: %v", err)
		}
	})
}

// TestScopeValidators: validators are asked only about containers in
// their scope, and a required-plugins rule counts a plugin present for a
// container outside its scope.
func TestScopeValidators(t *testing.T) {
	scope := scopeArg(t, gpuScope)
	rt := newTestRuntime(t, []testPlugin{
		{"10-gpu", helperArgs("stub", "-scope", scope, "-env", "GPU=1", "-events", "CreateContainer")},
		{"20-val", helperArgs("stub", "-events", "ValidateContainerAdjustment")},
		{"30-gpuval", helperArgs("stub", "-scope", scope, "-events", "ValidateContainerAdjustment")},
	}, WithDefaultValidator(validator.Config{Enable: true, RequiredPlugins: []string{"gpu"}}))
	rt.start(t)
	ctx := ctxT(t)
	if _, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: cpuPod(1), Container: testCtr(1, 1)}); err != nil {
		t.Fatalf("CPU container: %v", err)
	}
	rsp, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: gpuPod(0), Container: testCtr(0, 0)})
	if err != nil || !slices.Equal(envOf(rsp.Adjust), []string{"GPU=1"}) {
		t.Fatalf("GPU container: %v %v", rsp, err)
	}
	for _, want := range []string{
		"VALIDATE ctr1 pristine-env=BASE=1 adjusted-env=0 plugins=10-gpu",
		"VALIDATE ctr0 pristine-env=BASE=1 adjusted-env=1 plugins=10-gpu",
	} {
		rt.logs.wait(t, want, func(r logRecord) bool { return output("20-val", "VALIDATE")(r) && r.msg == want })
	}
	rt.logs.wait(t, "GPU validation", output("30-gpuval", "VALIDATE ctr0"))
	if got := rt.logs.lines("30-gpuval", "VALIDATE"); len(got) != 1 {
		t.Errorf("GPU validator validated %q, want ctr0 only", got)
	}
}
