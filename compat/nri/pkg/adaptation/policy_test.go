package adaptation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	nrikit "github.com/nrikit/nrikit/adaptation"
	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
)

// annotator sets an annotation on every container it sees created.
type annotator struct{}

func (annotator) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return &api.ContainerAdjustment{Annotations: map[string]string{"seen-by": "annotator"}}, nil, nil
}

// startWithAnnotator starts a runtime on a fake containerd whose plugin
// configuration directory is conf, with the annotator as its one plugin
// (builtin, index 10) and no external connections; the caller stops it.
func startWithAnnotator(t *testing.T, conf string) *Adaptation {
	t.Helper()
	svc, err := stub.NewBuiltin(annotator{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeContainerd{pods: map[string]*PodSandbox{}, ctrs: map[string]*Container{}}
	a, err := New("fake-containerd", "v2", f.sync, f.update, WithPluginConfigPath(conf),
		WithPluginPath(filepath.Join(t.TempDir(), "none")), WithDisabledExternalConnections(),
		WithNativeOptions(nrikit.WithBuiltinPlugin("10", "annotator", svc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPolicyPath(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/nri/conf.d":  "/etc/nri/policy.yaml",
		"/etc/nri/conf.d/": "/etc/nri/policy.yaml",
		"/opt/nri/config":  "/opt/nri/policy.yaml",
	} {
		if got := PolicyPath(in); got != want {
			t.Errorf("PolicyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPolicyFile: the policy file beside the plugin configuration
// directory is enforced without any option of the runtime's.
func TestPolicyFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := "required: [absent]\ngrants:\n- plugins: [annotator]\n  adjust: {env: [\"*\"]}\n"
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startWithAnnotator(t, conf)
	defer a.Stop()
	if a.Native().Policy() == nil {
		t.Fatal("policy file not read")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	pod := &PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"}
	var rerr *nrikit.RequiredPluginError
	if err := a.RunPodSandbox(ctx, &RunPodSandboxRequest{Pod: pod}); !errors.As(err, &rerr) || rerr.Plugin != "absent" {
		t.Fatalf("RunPodSandbox without the required plugin: %v", err)
	}
	_, err := a.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: &Container{Id: "ctr0", PodSandboxId: "pod0"}})
	if !errors.As(err, &rerr) {
		t.Fatalf("CreateContainer without the required plugin: %v", err)
	}

	// Without the requirement, the plugin's annotation is beyond its
	// grant: it fails (going on without its answer, its failure policy).
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy[len("required: [absent]\n"):]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Native().ReloadPolicy(); err != nil {
		t.Fatal(err)
	}
	rsp, err := a.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: &Container{Id: "ctr0", PodSandboxId: "pod0"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rsp.GetAdjust().GetAnnotations(); len(got) != 0 {
		t.Errorf("annotations %v beyond the plugin's grant applied", got)
	}
}
