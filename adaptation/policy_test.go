package adaptation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/validator"
)

// policed is a builtin plugin whose answers the test sets: environment
// variables, updates and evictions in its CreateContainer answer.
type policed struct {
	unimplementedPlugin
	fp     *api.FailurePolicy
	scope  *api.PluginScope
	env    []string
	update []*api.ContainerUpdate
	evict  []*api.ContainerEviction
	// hang makes RunPodSandbox wait for its context to end.
	hang bool
	// syncUpdate is the answer to Synchronize.
	syncUpdate []*api.ContainerUpdate

	mu   sync.Mutex
	seen []string
}

func (p *policed) Configure(context.Context, *api.ConfigureRequest) (*api.ConfigureResponse, error) {
	return &api.ConfigureResponse{Events: int32(api.MaskOf(api.Event_RUN_POD_SANDBOX, api.Event_CREATE_CONTAINER)),
		FailurePolicy: p.fp, Scope: p.scope}, nil
}

func (p *policed) Synchronize(_ context.Context, req *api.SynchronizeRequest) (*api.SynchronizeResponse, error) {
	if req.More {
		return &api.SynchronizeResponse{More: true}, nil
	}
	return &api.SynchronizeResponse{Update: p.syncUpdate}, nil
}

func (p *policed) Shutdown(context.Context, *api.Empty) (*api.Empty, error) { return &api.Empty{}, nil }

func (p *policed) RunPodSandbox(ctx context.Context, req *api.RunPodSandboxRequest) (*api.RunPodSandboxResponse, error) {
	p.note("run " + req.GetPod().GetId())
	if p.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &api.RunPodSandboxResponse{}, nil
}

func (p *policed) CreateContainer(_ context.Context, req *api.CreateContainerRequest) (*api.CreateContainerResponse, error) {
	p.note("create " + req.GetContainer().GetId())
	adj := &api.ContainerAdjustment{}
	for _, e := range p.env {
		adj.AddEnv(e, "1")
	}
	return &api.CreateContainerResponse{Adjust: adj, Update: p.update, Evict: p.evict}, nil
}

func (p *policed) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, s)
}

func (p *policed) events() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// parsePolicy parses a policy document or fails the test.
func parsePolicy(t testing.TB, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return p
}

// testPolicy lets 10-env set OK_* variables and update CPU shares, and
// every other plugin set any variable.
const testPolicy = `
grants:
- plugins: [10-env]
  adjust:
    env: ["OK_*"]
  update:
    cpu: {maxShares: 1024}
default:
  adjust:
    env: ["*"]
`

func cpuUpdate(id string, shares uint64) *api.ContainerUpdate {
	return &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{
		Resources: &api.LinuxResources{Cpu: &api.LinuxCPU{Shares: api.UInt64(shares)}}}}
}

func TestPolicyRefusesAnswer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        []string
		update     []*api.ContainerUpdate
		evict      []*api.ContainerEviction
		failReq    bool
		wantField  string // "": allowed
		wantInErr  string
		wantEnvOut string // with the other plugin's OTHER
	}{
		{name: "allowed", env: []string{"OK_A"}, update: []*api.ContainerUpdate{cpuUpdate("ctr9", 512)},
			wantEnvOut: "OK_A=1,OTHER=1"},
		{name: "env denied, fail request", env: []string{"OK_A", "BAD"}, failReq: true,
			wantField: "env", wantInErr: `env "BAD" denied`},
		{name: "env denied, go on", env: []string{"OK_A", "BAD"}, wantField: "env", wantEnvOut: "OTHER=1"},
		{name: "update over cap", env: []string{"OK_A"}, update: []*api.ContainerUpdate{cpuUpdate("ctr9", 4096)},
			failReq: true, wantField: "update.linux.resources.cpu", wantInErr: "update.linux.resources.cpu"},
		{name: "update of own container over cap, go on", update: []*api.ContainerUpdate{cpuUpdate("ctr0", 4096)},
			wantField: "update.linux.resources.cpu", wantEnvOut: "OTHER=1"},
		{name: "eviction not granted", env: []string{"OK_A"}, failReq: true,
			evict:     []*api.ContainerEviction{{ContainerId: "ctr9", Reason: "test"}},
			wantField: "evict", wantInErr: `evict "ctr9" denied`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newCountingRecorder()
			env := &policed{fp: &api.FailurePolicy{FailRequest: tc.failReq}, env: tc.env, update: tc.update, evict: tc.evict}
			other := &policed{env: []string{"OTHER"}}
			rt := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, testPolicy)), WithMetricsRecorder(reg),
				WithBuiltinPlugin("10", "env", env), WithBuiltinPlugin("20", "other", other))
			rt.start(t)
			rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
			switch {
			case tc.wantInErr != "":
				var perr *PluginError
				var derr *policy.DeniedError
				if !errors.As(err, &perr) || perr.Kind != FailureDenied || !errors.As(err, &derr) {
					t.Fatalf("CreateContainer: %v, want a denied *PluginError", err)
				}
				for _, want := range []string{"10-env", tc.wantInErr, "ctr-0 (ctr0)", "pod default/pod-0", "policy.yaml:"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
			case err != nil:
				t.Fatalf("CreateContainer: %v", err)
			default:
				if got := strings.Join(envOf(rsp.Adjust), ","); got != tc.wantEnvOut {
					t.Errorf("env %q, want %q", got, tc.wantEnvOut)
				}
				if tc.wantField != "" && len(rsp.GetUpdate()) > 0 {
					t.Errorf("denied answer's updates applied: %v", rsp.GetUpdate())
				}
			}
			denied := reg.denied("10-env", tc.wantField)
			switch {
			case tc.wantField == "" && denied != 0:
				t.Errorf("denied count %v for an allowed answer", denied)
			case tc.wantField != "" && denied < 1:
				t.Errorf("%s{plugin=10-env,field=%s} = %v, want at least 1", MetricDenied, tc.wantField, denied)
			}
			if tc.wantField != "" {
				rt.logs.wait(t, "denied log line", func(r logRecord) bool {
					return r.msg == "plugin's changes denied by the policy" && r.attrs["plugin"] == "10-env" &&
						strings.Contains(r.attrs["error"], tc.wantField)
				})
			}
		})
	}
}

func TestPolicyWhere(t *testing.T) {
	const doc = `
grants:
- plugins: [gpu]
  where: {namespaces: [gpu-*]}
  adjust: {env: ["*"]}
`
	gpu := &policed{env: []string{"GPU"}}
	rt := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, doc)), WithBuiltinPlugin("10", "gpu", gpu))
	rt.start(t)
	inside, outside := testPod(1), testPod(2)
	inside.Namespace = "gpu-jobs"
	for _, pod := range []*api.PodSandbox{inside, outside} {
		must(t, rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: pod}))
	}
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: outside, Container: testCtr(2, 2)})
	must(t, err)
	if env := envOf(rsp.Adjust); len(env) != 0 {
		t.Errorf("plugin outside its where changed env %v", env)
	}
	rsp, err = rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: inside, Container: testCtr(1, 1)})
	must(t, err)
	if got := strings.Join(envOf(rsp.Adjust), ","); got != "GPU=1" {
		t.Errorf("env %q inside the where", got)
	}
	if got, want := gpu.events(), []string{"run pod1", "create ctr1"}; !slices.Equal(got, want) {
		t.Errorf("plugin saw %v, want %v (nothing outside its where)", got, want)
	}
	info, _ := rt.plugin("10-gpu")
	if !strings.Contains(info.Scope, "gpu-*") {
		t.Errorf("plugin's scope %q does not show its where", info.Scope)
	}
	// An update of a container outside the where is refused.
	p := rt.a.findPlugin(t, "10-gpu")
	rsp2, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{Update: []*api.ContainerUpdate{cpuUpdate("ctr2", 2)}})
	must(t, err)
	if len(rsp2.GetFailed()) != 1 {
		t.Errorf("update outside the where: failed %v, want it", rsp2.GetFailed())
	}
}

// findPlugin returns the registered plugin full.
func (a *Adaptation) findPlugin(t testing.TB, full string) *plugin {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.findLocked(full)
	if p == nil {
		t.Fatalf("plugin %s not registered", full)
	}
	return p
}

func TestPolicyUnsolicitedUpdates(t *testing.T) {
	reg := newCountingRecorder()
	rt := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, testPolicy)), WithMetricsRecorder(reg),
		WithBuiltinPlugin("10", "env", &policed{}))
	rt.start(t)
	p := rt.a.findPlugin(t, "10-env")
	rsp, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
		Update: []*api.ContainerUpdate{cpuUpdate("ctr1", 512), cpuUpdate("ctr2", 9999)}})
	must(t, err)
	if len(rsp.GetFailed()) != 1 || rsp.GetFailed()[0].GetContainerId() != "ctr2" {
		t.Errorf("failed %v, want the update over the cap", rsp.GetFailed())
	}
	ups, _ := rt.store.Updates()
	if len(ups) != 1 || len(ups[0]) != 1 || ups[0][0].GetContainerId() != "ctr1" {
		t.Errorf("runtime got updates %v, want only ctr1's", ups)
	}
	if _, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
		Evict: []*api.ContainerEviction{{ContainerId: "ctr1"}}}); err == nil || !strings.Contains(err.Error(), "evict") {
		t.Errorf("eviction not granted: %v, want a refusal", err)
	}
	if n := reg.denied("10-env", ""); n != 2 {
		t.Errorf("denied count %v, want 2", n)
	}
}

// writePolicy writes a policy file the runtime trusts (owned by the test's
// user, mode 0600) and moves its modification time on.
func writePolicy(t *testing.T, path, doc string) {
	t.Helper()
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte(doc), 0o600))
	must(t, os.Rename(tmp, path))
}

func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writePolicy(t, path, "default: {adjust: {env: [\"*\"]}}\n")
	rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
		WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}, fp: &api.FailurePolicy{FailRequest: true}}))
	rt.start(t)
	createWorks(t, rt, 0, "A=1")

	// A valid new policy applies to the connected plugin.
	writePolicy(t, path, "default: {adjust: {env: [\"B\"]}}\n")
	must(t, rt.a.ReloadPolicy())
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)}); err == nil {
		t.Fatal("CreateContainer under the reloaded policy: no refusal")
	}

	// An invalid one keeps it, with its mistakes.
	writePolicy(t, path, "default: {adjust: {env: [\"*\"]}}\ngrants: [{plugins: [x], adjsut: {}}]\n")
	err := rt.a.ReloadPolicy()
	if err == nil || !strings.Contains(err.Error(), "policy.yaml:2:") {
		t.Fatalf("ReloadPolicy of an invalid file: %v, want its mistake with its line", err)
	}
	rt.logs.wait(t, "invalid policy log", func(r logRecord) bool {
		return r.msg == "invalid policy file, keeping the policy in force" && strings.Contains(r.attrs["error"], "policy.yaml:2:")
	})
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 2)}); err == nil {
		t.Fatal("invalid policy file replaced the policy in force")
	}

	// A removed file keeps it too.
	must(t, os.Remove(path))
	must(t, rt.a.ReloadPolicy())
	if rt.a.Policy() == nil {
		t.Fatal("removing the policy file dropped the policy")
	}
}

func TestPolicyWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	// Absent at start: no policy.
	rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(scaled(20*time.Millisecond)),
		WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}, fp: &api.FailurePolicy{FailRequest: true}}))
	if rt.a.Policy() != nil {
		t.Fatal("a policy without a policy file")
	}
	rt.start(t)
	createWorks(t, rt, 0, "A=1")
	writePolicy(t, path, "default: {adjust: {env: [\"B\"]}}\n")
	rt.logs.wait(t, "policy reloaded", func(r logRecord) bool { return r.msg == "policy reloaded" })
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 1)}); err == nil {
		t.Fatal("CreateContainer under the new policy: no refusal")
	}
}

func TestPolicyFileInvalidAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy(t, path, "grants: 7\n")
	// Fail closed: the runtime starts under a policy that allows no
	// change, logs the mistakes, and reads the file again once fixed.
	rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(scaled(20*time.Millisecond)),
		WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}, fp: &api.FailurePolicy{FailRequest: true}}))
	rt.logs.wait(t, "invalid policy logged", func(r logRecord) bool {
		return r.msg == "invalid policy file: no plugin may change anything until it is fixed" &&
			strings.Contains(r.attrs["error"], "policy.yaml:1:")
	})
	rt.start(t)
	if _, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err == nil {
		t.Fatal("CreateContainer under an invalid policy file: the plugin's change was not refused")
	}
	writePolicy(t, path, "default: {adjust: {env: [\"A\"]}}\n")
	rt.logs.wait(t, "policy reloaded", func(r logRecord) bool { return r.msg == "policy reloaded" })
	createWorks(t, rt, 0, "A=1")

	// The last of WithPolicyFile and WithPolicy applies.
	a, err := New("rt", "v1", (&policed{}).list, noUpdate, WithPolicyFile(path), WithPolicy(nil))
	must(t, err)
	if a.Policy() != nil {
		t.Fatal("WithPolicy(nil) after WithPolicyFile: a policy")
	}
}

func (*policed) list(context.Context) ([]*api.PodSandbox, []*api.Container, error) {
	return nil, nil, nil
}

func noUpdate(context.Context, []*api.ContainerUpdate, []*api.ContainerEviction) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func TestRequiredPlugins(t *testing.T) {
	ann := validator.RequiredPluginsAnnotation
	for _, tc := range []struct {
		name     string
		policy   string
		pod      map[string]string
		run      string // the plugin named by RunPodSandbox's error; "": it succeeds
		create   string // likewise for CreateContainer
		runFails bool   // the present plugin times out in RunPodSandbox
	}{
		{name: "none", policy: "default: {}\n"},
		{name: "policy, present", policy: "required: [present]\n"},
		{name: "policy, absent", policy: "required: [absent]\n", run: "absent", create: "absent"},
		{name: "policy, IDX-NAME absent", policy: "required: [11-present]\n", run: "11-present", create: "11-present"},
		{name: "annotation, absent", pod: map[string]string{ann: "[absent]"}, run: "absent", create: "absent"},
		{name: "pod annotation, absent", pod: map[string]string{ann + "/pod": "- 10-present\n- gone\n"}, run: "gone", create: "gone"},
		{name: "container annotation", pod: map[string]string{ann + "/container.ctr-0": "[absent]"}, create: "absent"},
		{name: "other container's annotation", pod: map[string]string{ann + "/container.db": "[absent]"}},
		{name: "required plugin times out", policy: "required: [present]\n", runFails: true, run: "10-present"},
		{name: "failing plugin not required", runFails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.policy != "" {
				opts = append(opts, WithPolicy(parsePolicy(t, tc.policy)))
			}
			pl := &policed{hang: tc.runFails, fp: &api.FailurePolicy{KeepConnected: true}}
			opts = append(opts, WithBuiltinPlugin("10", "present", pl), WithRequestTimeout(scaled(300*time.Millisecond)))
			rt := newTestRuntime(t, nil, opts...)
			rt.start(t)
			pod := testPod(0)
			pod.Annotations = tc.pod
			checkRequired(t, "RunPodSandbox", rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: pod}), tc.run)
			_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: testCtr(0, 0)})
			checkRequired(t, "CreateContainer", err, tc.create)
		})
	}
}

func checkRequired(t *testing.T, op string, err error, want string) {
	t.Helper()
	var rerr *RequiredPluginError
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", op, err)
	case want == "":
	case !errors.As(err, &rerr) || rerr.Plugin != want:
		t.Errorf("%s: %v, want a *RequiredPluginError naming %q", op, err, want)
	}
}

func TestRequiredAnnotationBounds(t *testing.T) {
	rt := newTestRuntime(t, nil, WithBuiltinPlugin("10", "present", &policed{}))
	rt.start(t)
	many := "[" + strings.Repeat("present, ", MaxRequiredAnnotationEntries) + "present]"
	for _, value := range []string{strings.Repeat("x", MaxRequiredAnnotationSize+1), many, "[../bad]", "{a: b}"} {
		pod := testPod(0)
		pod.Annotations = map[string]string{validator.RequiredPluginsAnnotation: value}
		err := rt.a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: pod})
		if err == nil || !strings.Contains(err.Error(), validator.RequiredPluginsAnnotation) {
			t.Errorf("annotation %.40q: %v, want it refused", value, err)
		}
	}
}

func TestPolicySynchronizeUpdates(t *testing.T) {
	reg := newCountingRecorder()
	pl := &policed{syncUpdate: []*api.ContainerUpdate{cpuUpdate("ctr1", 512), cpuUpdate("ctr2", 9999)}}
	rt := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, testPolicy)), WithMetricsRecorder(reg),
		WithBuiltinPlugin("10", "env", pl))
	for i := 1; i <= 2; i++ {
		rt.store.AddPod(testPod(i))
		rt.store.AddCtr(testCtr(i, i))
	}
	rt.start(t)
	rt.logs.wait(t, "denied Synchronize update", func(r logRecord) bool {
		return r.msg == "plugin's update denied by the policy" && r.attrs["op"] == "Synchronize"
	})
	deadline := time.Now().Add(scaled(5 * time.Second))
	for rt.store.UpdateCalls() == 0 && time.Now().Before(deadline) {
		time.Sleep(scaled(10 * time.Millisecond))
	}
	ups, _ := rt.store.Updates()
	if len(ups) != 1 || len(ups[0]) != 1 || ups[0][0].GetContainerId() != "ctr1" {
		t.Errorf("runtime got updates %v, want only ctr1's", ups)
	}
	if n := reg.denied("10-env", "update.linux.resources.cpu"); n != 1 {
		t.Errorf("denied count %v, want 1", n)
	}
}
