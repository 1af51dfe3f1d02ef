package runtimerec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/internal/testing/runtimetest"
	"github.com/nrikit/nrikit/internal/testing/testscale"
	"github.com/nrikit/nrikit/policy"
	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
	"github.com/nrikit/nrikit/stub"
)

// setter is a plugin setting one variable in every container it creates.
type setter struct{ key, value string }

func (s *setter) CreateContainer(_ context.Context, _ *api.PodSandbox, _ *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	adj := &api.ContainerAdjustment{}
	adj.AddEnv(s.key, s.value)
	return adj, nil, nil
}

func inproc(t *testing.T, idx, name string, plugin any) adaptation.Option {
	t.Helper()
	svc, err := stub.NewBuiltin(plugin)
	if err != nil {
		t.Fatal(err)
	}
	return adaptation.WithBuiltinPlugin(idx, name, svc)
}

// TestRuntimeRecording records a runtime with two plugins, one of which
// the policy refuses a variable, and checks the recording: the runtime's
// header, the snapshot, every event in order, each plugin's answer with
// its container and latency, the refusal with its event and container,
// the validation request with the combined adjustment, values redacted.
func TestRuntimeRecording(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "node.nrirec")
	conf := filepath.Join(dir, FileName)
	if err := os.WriteFile(conf, []byte("path: "+path+"\nkeepEnv: [VISIBLE]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := LoadFile(conf, "node-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse("policy.yaml", []byte("grants:\n  - plugins: [10-env]\n    adjust: {env: [VISIBLE, SECRET]}\n  - plugins: [20-other]\n    adjust: {env: [ALLOWED]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := runtimetest.NewStore()
	store.AddPod(&api.PodSandbox{Id: "pod-0", Name: "existing", Namespace: "ns"})
	opts := append([]adaptation.Option{adaptation.WithDisabledExternalConnections(), adaptation.WithPolicy(pol),
		inproc(t, "10", "env", &setter{"SECRET", "hunter2"}), inproc(t, "20", "other", &setter{"DENIED", "x"})},
		rec.Options()...)
	a, err := adaptation.New("test-runtime", "v9", store.List, store.Update, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pod := &api.PodSandbox{Id: "pod-1", Name: "p", Namespace: "ns"}
	ctr := &api.Container{Id: "ctr-1", PodSandboxId: "pod-1", Name: "c", Env: []string{"PASSWORD=hunter2"}}
	store.AddPod(pod)
	if err := a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	store.AddCtr(ctr)
	rsp, err := a.CreateContainer(ctx, &api.CreateContainerRequest{Pod: pod, Container: ctr})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: pod, Container: ctr}); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rsp.GetAdjust().GetEnv(); len(got) != 1 || got[0].GetKey() != "SECRET" {
		t.Fatalf("the runtime's adjustment %v, want SECRET alone (DENIED refused)", got)
	}

	r, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header
	if h.GetSource() != record.SourceRuntime || h.GetRuntimeName() != "test-runtime" || h.GetNode() != "node-1" ||
		h.GetRecorder() != "99-nri-record" || !h.GetRedaction().GetEnabled() {
		t.Errorf("header %v", h)
	}
	var requests []string
	answers := map[string]*record.Entry{}
	var refusal *record.Entry
	var validate *api.ValidateContainerAdjustmentRequest
	for _, e := range r.Entries {
		switch e.GetKind() {
		case recordpb.Kind_SYNCHRONIZE:
			if s := e.Message.(*api.SynchronizeRequest); len(s.GetPods()) != 1 || s.GetPods()[0].GetId() != "pod-0" {
				t.Errorf("snapshot %v", s)
			}
		case recordpb.Kind_REQUEST:
			requests = append(requests, e.GetEvent().Name())
			if v, ok := e.Message.(*api.ValidateContainerAdjustmentRequest); ok {
				validate = v
			}
		case recordpb.Kind_ANSWER:
			answers[e.GetPlugin()+"/"+e.GetEvent().Name()] = e
		case recordpb.Kind_REFUSAL:
			refusal = e
		}
	}
	// No CreateContainer: the validation tells the same.
	if want := []string{"RunPodSandbox", "ValidateContainerAdjustment", "PostCreateContainer"}; !slices.Equal(requests, want) {
		t.Errorf("requests %v, want %v", requests, want)
	}
	env := answers["10-env/CreateContainer"]
	if env == nil || env.GetContainerId() != "ctr-1" || env.GetPodId() != "pod-1" || env.GetDurationNanos() <= 0 {
		t.Fatalf("10-env's answer %v", env)
	}
	kv := env.Message.(*api.CreateContainerResponse).GetAdjust().GetEnv()
	if len(kv) != 1 || kv[0].GetKey() != "SECRET" || !strings.HasPrefix(kv[0].GetValue(), record.RedactedPrefix) {
		t.Errorf("10-env's answer %v: want SECRET redacted", kv)
	}
	if answers["20-other/CreateContainer"] == nil || answers["99-nri-record/CreateContainer"] != nil {
		t.Errorf("answers %v: want 20-other's and not the recorder's own", answers)
	}
	if refusal == nil || refusal.GetPlugin() != "20-other" || refusal.GetEvent() != api.Event_CREATE_CONTAINER ||
		refusal.GetContainerId() != "ctr-1" || !slices.Equal(refusal.GetRefusedFields(), []string{"env"}) {
		t.Errorf("refusal %v", refusal)
	}
	if validate == nil || len(validate.GetAdjust().GetEnv()) != 1 || validate.GetContainer().GetEnv()[0] == "PASSWORD=hunter2" {
		t.Errorf("validation %v: want the combined adjustment, the proposed container redacted", validate)
	}
}

// TestLoadFile checks that a missing configuration records nothing, and
// that a configuration others may write, or an invalid one, is refused.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if r, err := LoadFile(filepath.Join(dir, FileName), "n", nil); r != nil || err != nil {
		t.Errorf("no file: %v, %v", r, err)
	}
	conf := filepath.Join(dir, FileName)
	os.WriteFile(conf, []byte("path: "+filepath.Join(dir, "r")+"\n"), 0o666)
	os.Chmod(conf, 0o666)
	if _, err := LoadFile(conf, "n", nil); err == nil {
		t.Error("a configuration others may write was used")
	}
	os.Chmod(conf, 0o600)
	os.WriteFile(conf, []byte("pth: /x\n"), 0o600)
	if _, err := LoadFile(conf, "n", nil); err == nil || !strings.Contains(err.Error(), "pth") {
		t.Errorf("an unknown key: %v", err)
	}
	os.WriteFile(conf, []byte("path: relative\n"), 0o600)
	if _, err := LoadFile(conf, "n", nil); err == nil {
		t.Error("a relative path was accepted")
	}
}
