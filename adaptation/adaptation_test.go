package adaptation

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/merge"
)

func envOf(adj *api.ContainerAdjustment) []string {
	var out []string
	for _, kv := range adj.GetEnv() {
		out = append(out, kv.Key+"="+kv.Value)
	}
	return out
}

func TestPreinstalledPlugins(t *testing.T) {
	t.Setenv("NRIKIT_TEST_RUNTIME_ENV", "inherited")
	rt := newTestRuntime(t, []testPlugin{
		{"20-beta", helperArgs("stub", "-env", "BETA=2")},
		{"10-alpha", helperArgs("stub", "-env", "ALPHA=1")},
	})
	// Files that are not plugins.
	must(t, os.WriteFile(filepath.Join(rt.dir, "30-gamma"), []byte("#!/bin/sh\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(rt.dir, "badname"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Mkdir(filepath.Join(rt.dir, "40-dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(rt.conf, "10-alpha.conf"), []byte("alpha-config"), 0o644))
	must(t, os.WriteFile(filepath.Join(rt.conf, "alpha.conf"), []byte("not this one"), 0o644))
	must(t, os.WriteFile(filepath.Join(rt.conf, "beta.conf"), []byte("beta-config"), 0o644))
	rt.start(t)

	infos := rt.a.Plugins()
	var names []string
	for _, p := range infos {
		names = append(names, p.FullName())
		if p.Kind != KindPreinstalled || p.State != StateActive || p.PID <= 0 {
			t.Errorf("plugin %s: kind %v, state %v, pid %d", p.FullName(), p.Kind, p.State, p.PID)
		}
	}
	if !slices.Equal(names, []string{"10-alpha", "20-beta"}) {
		t.Fatalf("plugins %v, want [10-alpha 20-beta]", names)
	}
	for _, skipped := range []string{"30-gamma", "badname", "40-dir"} {
		if len(rt.logs.find(func(r logRecord) bool {
			return strings.HasPrefix(r.msg, "skipping") && strings.HasSuffix(r.attrs["path"], skipped)
		})) != 1 {
			t.Errorf("no skip log line for %s", skipped)
		}
	}
	rt.logs.wait(t, "config", output("10-alpha", "CONFIG"))
	rt.logs.wait(t, "config", output("20-beta", "CONFIG"))
	rt.logs.wait(t, "environment", output("10-alpha", "ENV"))
	if got := rt.logs.lines("10-alpha", "CONFIG"); len(got) != 1 || !strings.HasPrefix(got[0], `CONFIG "alpha-config" runtime=test-runtime/v1.0.0`) {
		t.Errorf("10-alpha config: %q", got)
	}
	if got := rt.logs.lines("20-beta", "CONFIG"); len(got) != 1 || !strings.HasPrefix(got[0], `CONFIG "beta-config"`) {
		t.Errorf("20-beta config: %q", got)
	}
	if got := rt.logs.lines("10-alpha", "ENV"); len(got) != 1 ||
		got[0] != "ENV NRI_PLUGIN_NAME=alpha NRI_PLUGIN_IDX=10 NRI_PLUGIN_SOCKET=3 runtime=inherited" {
		t.Errorf("10-alpha environment: %q", got)
	}

	// Both adjust, in index order: beta sees alpha's variable.
	rt.store.AddPod(testPod(0))
	rsp, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := envOf(rsp.Adjust); !slices.Equal(got, []string{"ALPHA=1", "BETA=2"}) {
		t.Errorf("merged env %v", got)
	}
	rt.logs.wait(t, "event", output("20-beta", "EVENT CreateContainer"))
	if got := rt.logs.lines("20-beta", "EVENT CreateContainer"); len(got) != 1 || got[0] != "EVENT CreateContainer pod0 ctr0 env=BASE=1,ALPHA=1" {
		t.Errorf("20-beta saw %q", got)
	}
}

func TestConflictingAdjustments(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-one", helperArgs("stub", "-env", "SHARED=1")},
		{"20-two", helperArgs("stub", "-env", "SHARED=2")},
	})
	rt.start(t)
	_, err := rt.a.CreateContainer(ctxT(t), &api.CreateContainerRequest{Pod: testPod(0), Container: testCtr(0, 0)})
	var conflict *merge.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("error %v, want a *merge.ConflictError", err)
	}
	if conflict.Plugins != [2]string{"10-one", "20-two"} || conflict.Field != api.Field_Env || conflict.Key != "SHARED" {
		t.Errorf("conflict %+v", conflict)
	}
}

func TestSubscriptionFiltersEvents(t *testing.T) {
	rt := newTestRuntime(t, []testPlugin{
		{"10-create", helperArgs("stub", "-events", "CreateContainer")},
		{"20-all", helperArgs("stub")},
	})
	rt.start(t)
	ctx := ctxT(t)
	pod, ctr := testPod(0), testCtr(0, 0)
	must(t, rt.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}))
	_, err := rt.a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	must(t, err)
	must(t, rt.a.StartContainer(ctx, &api.StartContainerRequest{Pod: pod, Container: ctr}))
	must(t, rt.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: pod, Container: ctr}))
	rt.logs.wait(t, "RemoveContainer at 20-all", output("20-all", "EVENT RemoveContainer"))
	rt.logs.wait(t, "CreateContainer at 10-create", output("10-create", "EVENT CreateContainer"))
	if got := rt.logs.lines("10-create", "EVENT"); len(got) != 1 || !strings.HasPrefix(got[0], "EVENT CreateContainer") {
		t.Errorf("10-create got %q, want CreateContainer only", got)
	}
	if got := rt.logs.lines("20-all", "EVENT"); len(got) != 4 {
		t.Errorf("20-all got %q", got)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
