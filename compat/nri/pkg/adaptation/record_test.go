package adaptation

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nrikit/nrikit/record"
	"github.com/nrikit/nrikit/record/recordpb"
)

// TestRecordFile: the recording configuration beside the plugin
// configuration directory makes the runtime record, with the plugins'
// answers, without any option of the runtime's; Stop closes the file.
func TestRecordFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "runtime.nrirec")
	if err := os.WriteFile(RecordPath(conf), []byte("path: "+out+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := RecordPath("/etc/nri/conf.d"); got != "/etc/nri/record.yaml" {
		t.Errorf("RecordPath = %s", got)
	}
	a := startWithAnnotator(t, conf)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	pod := &PodSandbox{Id: "pod0", Name: "pod0", Namespace: "default"}
	if err := a.RunPodSandbox(ctx, &RunPodSandboxRequest{Pod: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateContainer(ctx, &CreateContainerRequest{Pod: pod, Container: &Container{Id: "ctr0", PodSandboxId: "pod0"}}); err != nil {
		t.Fatal(err)
	}
	a.Stop()

	rec, err := record.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Header.GetSource() != record.SourceRuntime || rec.Header.GetRuntimeName() != "fake-containerd" {
		t.Errorf("header %v", rec.Header)
	}
	var creates, answers int
	for _, e := range rec.Entries {
		switch {
		case e.GetKind() == recordpb.Kind_REQUEST && e.GetEvent().Name() == "ValidateContainerAdjustment":
			creates++
		case e.GetKind() == recordpb.Kind_ANSWER && e.GetPlugin() == "10-annotator" && e.GetContainerId() == "ctr0":
			answers++
		}
	}
	if creates != 1 || answers != 1 {
		t.Errorf("recorded %d creations and %d answers of the annotator, want 1 and 1", creates, answers)
	}
}
