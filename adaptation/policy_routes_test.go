package adaptation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/api/capability"
)

// The routes of issue 37 ("Trust, second step") that the runtime's
// enforcement did not hold.

// wherePolicy grants the plugin gpu CPU updates and evictions in the
// namespaces given.
func wherePolicy(namespaces string) string {
	return "grants:\n- plugins: [gpu]\n  where: {namespaces: [" + namespaces + "]}\n  update: {cpu: {}}\n  evict: true\n"
}

// TestRouteReloadUnsolicited: after a reload narrows a plugin's where,
// its own updates and evictions (UpdateContainers) of containers outside
// the new where are refused at once, not once it reconnects; those
// within it still apply (route "reload"). With a ListFunc and with a
// SyncFunc, which the runtime's lock guards.
func TestRouteReloadUnsolicited(t *testing.T) {
	for _, locked := range []bool{false, true} {
		name := "ListFunc"
		if locked {
			name = "SyncFunc"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "policy.yaml")
			writePolicy(t, path, wherePolicy("gpu-*, ml-*"))
			opts := []Option{WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
				WithBuiltinPlugin("10", "gpu", &policed{})}
			var (
				a     *Adaptation
				store interface {
					AddPod(*api.PodSandbox)
					AddCtr(*api.Container)
					Updates() ([][]*api.ContainerUpdate, [][]*api.ContainerEviction)
				}
				run = func(f func()) { f() }
			)
			if locked {
				rt := newLockedRuntime(t, opts...)
				a, store, run = rt.a, rt.store, rt.locked
			} else {
				rt := newTestRuntime(t, nil, opts...)
				rt.start(t)
				a, store = rt.a, rt.store
			}
			gpu, ml := testPod(1), testPod(2)
			gpu.Namespace, ml.Namespace = "gpu-jobs", "ml-jobs"
			for i, pod := range []*api.PodSandbox{gpu, ml} {
				ctr := testCtr(i+1, i+1)
				store.AddPod(pod)
				store.AddCtr(ctr)
				run(func() {
					must(t, a.RunPodSandbox(ctxT(t), &api.RunPodSandboxRequest{Pod: pod}))
					_, err := a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: pod, Container: ctr})
					must(t, err)
				})
			}
			p := a.findPlugin(t, "10-gpu")
			rsp, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
				Update: []*api.ContainerUpdate{cpuUpdate("ctr1", 1), cpuUpdate("ctr2", 2)}})
			must(t, err)
			if len(rsp.GetFailed()) != 0 {
				t.Fatalf("before the reload: failed %v", rsp.GetFailed())
			}

			writePolicy(t, path, wherePolicy("gpu-*"))
			must(t, a.ReloadPolicy())
			rsp, err = p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
				Update: []*api.ContainerUpdate{cpuUpdate("ctr1", 3), cpuUpdate("ctr2", 4)}})
			must(t, err)
			if f := rsp.GetFailed(); len(f) != 1 || f[0].GetContainerId() != "ctr2" {
				t.Errorf("after the reload: failed %v, want the update of ctr2, outside the new where", f)
			}
			if _, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
				Evict: []*api.ContainerEviction{{ContainerId: "ctr2"}}}); err == nil || !strings.Contains(err.Error(), "outside the grant's where") {
				t.Errorf("eviction of ctr2 after the reload: %v, want a refusal naming the where", err)
			}
			if _, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
				Evict: []*api.ContainerEviction{{ContainerId: "ctr1"}}}); err != nil {
				t.Errorf("eviction of ctr1 after the reload: %v", err)
			}
			ups, evs := store.Updates()
			var got []string
			for _, u := range ups {
				for _, x := range u {
					got = append(got, x.GetContainerId())
				}
			}
			for _, e := range evs {
				for _, x := range e {
					got = append(got, "evict "+x.GetContainerId())
				}
			}
			if want := "ctr1,ctr2,ctr1,evict ctr1"; strings.Join(got, ",") != want {
				t.Errorf("the runtime applied %v, want %s", got, want)
			}
		})
	}
}

// TestRoutePolicyDirectoryRuntime: a policy file's directory others may
// write is not trusted: without the file (anyone may have removed it) the
// runtime fails closed instead of running with no policy, and so it does
// with the file (route "policy directory").
func TestRoutePolicyDirectoryRuntime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nri")
	must(t, os.Mkdir(dir, 0o777))
	must(t, os.Chmod(dir, 0o777))
	path := filepath.Join(dir, "policy.yaml")
	for _, present := range []bool{false, true} {
		if present {
			writePolicy(t, path, "default: {adjust: {env: [\"*\"]}}\n")
		}
		rt := newTestRuntime(t, nil, WithPolicyFile(path), WithPolicyReloadInterval(time.Hour),
			WithBuiltinPlugin("10", "env", &policed{env: []string{"A"}}))
		rt.start(t)
		if rt.a.Policy() == nil {
			t.Fatalf("file present %v: no policy: a directory others may write let every plugin do everything", present)
		}
		rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
		must(t, err)
		if env := envOf(rsp.Adjust); len(env) != 0 {
			t.Errorf("file present %v: the plugin changed %v under an untrusted policy directory", present, env)
		}
		rt.logs.wait(t, "untrusted directory log", func(r logRecord) bool {
			return r.msg == "invalid policy file: no plugin may change anything until it is fixed" &&
				strings.Contains(r.attrs["error"], "writable by its group or others")
		})
	}
}

// TestRouteAudit: a grant in audit mode, or a policy in audit mode,
// logs and counts its violations (action "audited") but does not refuse
// them: the answer's changes, updates and evictions are applied, and the
// plugin is told every capability the runtime applies. A grant that
// says action: deny under an auditing policy still refuses (item 8).
func TestRouteAudit(t *testing.T) {
	const doc = `
action: audit
grants:
- plugins: [strict]
  action: deny
  adjust: {env: ["OK_*"]}
- plugins: [rollout]
  adjust: {env: ["OK_*"]}
  update: {cpu: {maxShares: 1024}}
`
	reg := newCountingRecorder()
	rt := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, doc)), WithMetricsRecorder(reg),
		WithBuiltinPlugin("10", "rollout", &policed{env: []string{"BAD"}}))
	rt.start(t)
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	must(t, err)
	if got := strings.Join(envOf(rsp.Adjust), ","); got != "BAD=1" {
		t.Errorf("audited answer: env %q, want it applied", got)
	}
	rt.logs.wait(t, "audit log", func(r logRecord) bool {
		return r.msg == "plugin's changes would be denied by the policy (audit)" && strings.Contains(r.attrs["error"], `env "BAD"`) &&
			strings.Contains(r.attrs["error"], "would be denied")
	})
	p := rt.a.findPlugin(t, "10-rollout")
	up, err := p.updateContainers(ctxT(t), &api.UpdateContainersRequest{
		Update: []*api.ContainerUpdate{cpuUpdate("ctr1", 9999)}, Evict: []*api.ContainerEviction{{ContainerId: "ctr1"}}})
	must(t, err)
	if len(up.GetFailed()) != 0 {
		t.Errorf("audited update failed: %v", up.GetFailed())
	}
	if ups, evs := rt.store.Updates(); len(ups) != 1 || len(evs) != 1 || len(evs[0]) != 1 {
		t.Errorf("the runtime got updates %v, evictions %v: want the audited ones", ups, evs)
	}
	if n := reg.deniedAs("10-rollout", "", ActionAudited); n != 3 {
		t.Errorf("audited count %v, want 3 (env, update, evict)", n)
	}
	if n := reg.deniedAs("10-rollout", "", ActionDenied); n != 0 {
		t.Errorf("denied count %v, want 0", n)
	}
	if told := p.toldCapabilities(); told != capability.All() {
		t.Errorf("told %v under audit, want everything the runtime applies", told)
	}

	// A grant that says deny refuses, under the auditing policy.
	reg2 := newCountingRecorder()
	rt2 := newTestRuntime(t, nil, WithPolicy(parsePolicy(t, doc)), WithMetricsRecorder(reg2),
		WithBuiltinPlugin("10", "strict", &policed{env: []string{"BAD"}, fp: &api.FailurePolicy{FailRequest: true}}))
	rt2.start(t)
	if _, err := rt2.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)}); err == nil {
		t.Error("a grant with action deny did not refuse under an auditing policy")
	}
	if n := reg2.deniedAs("10-strict", "env", ActionDenied); n != 1 {
		t.Errorf("denied count %v, want 1", n)
	}
}
