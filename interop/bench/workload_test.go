package bench

import (
	"os"
	"path/filepath"
	"testing"

	upapi "github.com/containerd/nri/pkg/api"
	nriapi "github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/interop/bench/internal/pluginconf"
	"github.com/nrikit/nrikit/interop/bench/internal/uprt"
	"github.com/nrikit/nrikit/interop/bench/internal/workload"
	"google.golang.org/protobuf/proto"
)

// TestRequestIsRealistic checks the benchmark request has the shape the
// issue asks for and the size of a real CreateContainerRequest.
func TestRequestIsRealistic(t *testing.T) {
	req := workload.CreateRequest(0)
	pod, ctr := req.GetPod(), req.GetContainer()
	if len(pod.GetLabels()) < 10 || len(pod.GetAnnotations()) < 10 {
		t.Errorf("pod has %d labels and %d annotations, want 10 each", len(pod.GetLabels()), len(pod.GetAnnotations()))
	}
	if len(ctr.GetEnv()) < 20 || len(ctr.GetMounts()) < 10 {
		t.Errorf("container has %d env vars and %d mounts, want 20 and 10", len(ctr.GetEnv()), len(ctr.GetMounts()))
	}
	if ctr.GetLinux().GetResources().GetMemory().GetLimit() == nil || ctr.GetLinux().GetResources().GetCpu().GetQuota() == nil {
		t.Error("container resources are not filled in")
	}
	n := proto.Size(req)
	t.Logf("CreateContainerRequest: %d bytes", n)
	if n < 1500 || n > 3072 {
		t.Errorf("request is %d bytes, want about 2 KB", n)
	}
}

// TestUpstreamGetsTheSameBytes checks the upstream side of the harness
// sends exactly the bytes of the nrikit side.
func TestUpstreamGetsTheSameBytes(t *testing.T) {
	pods, ctrs := workload.Existing(20)
	upPods, upCtrs := uprt.Existing(pods, ctrs)
	if len(upPods) != len(pods) || len(upCtrs) != len(ctrs) {
		t.Fatalf("converted %d pods and %d containers, want %d and %d", len(upPods), len(upCtrs), len(pods), len(ctrs))
	}
	ours, err := proto.MarshalOptions{Deterministic: true}.Marshal(&nriapi.SynchronizeRequest{Pods: pods, Containers: ctrs})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := proto.MarshalOptions{Deterministic: true}.Marshal(&upapi.SynchronizeRequest{Pods: upPods, Containers: upCtrs})
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(theirs) {
		t.Errorf("upstream encoding differs: %d bytes, nrikit %d bytes", len(theirs), len(ours))
	}
}

// TestPluginConfigRoundTrip checks what pluginDir writes is what the
// plugins read.
func TestPluginConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "10-env0")
	want := pluginconf.Config{EnvKey: "BENCH_0", EnvValue: "a=b", Namespace: "bench", PIDFile: exe + ".pid", Lifecycle: true}
	if err := pluginconf.Write(exe, want); err != nil {
		t.Fatal(err)
	}
	saved := os.Args[0]
	os.Args[0] = exe
	got, err := pluginconf.Load()
	os.Args[0] = saved
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Load = %+v, want %+v", got, want)
	}
	if _, err := pluginPID(dir, "10-env0"); err != nil {
		t.Errorf("PID file: %v", err)
	}
}
