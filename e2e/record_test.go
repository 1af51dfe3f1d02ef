package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nrikit/nrikit/e2e/harness"
)

// The recording of issue 41 on a real runtime: the recorder plugin (nri
// record) records the node while its pods run, and on nrikit the runtime
// records itself too (record.yaml beside its policy file, with every
// plugin's own answers); nri replay then plays each recording through
// gpu-env with a changed configuration, and under a policy refusing one
// of its changes, and names exactly the containers and fields that would
// differ; the changes are then rolled out for real, and the containers the
// runtime then creates have exactly the values the replay named.

// gpuConfig is gpu-env's configuration as recorded; gpuConfigNext sets
// another driver capability; refusingPolicy lets gpu-env set
// NVIDIA_VISIBLE_DEVICES only, so that the runtime refuses an answer that
// also sets NVIDIA_DRIVER_CAPABILITIES (which gpu-env always sets): the
// container gets neither. Its grant says identity: any: the runtime's gpu-env
// runs by hand on the host (docs/policy.md, Identity).
const (
	gpuConfig      = "namespaces: [ml]\nvisibleDevices: [\"[0-3]\"]\n"
	gpuConfigNext  = gpuConfig + "env: {NVIDIA_VISIBLE_DEVICES: void, NVIDIA_DRIVER_CAPABILITIES: all}\n"
	refusingPolicy = "version: 1\ngrants:\n  - plugins: [gpu-env]\n    identity: any\n    adjust:\n      env: [NVIDIA_VISIBLE_DEVICES]\n"
)

// replayContainer is what the test reads of a replay's JSON report.
type replayContainer struct {
	Name    string `json:"name"`
	Differs bool   `json:"differs"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
		New  string `json:"new"`
	} `json:"changes"`
	Answers []struct {
		Plugin  string `json:"plugin"`
		Differs bool   `json:"differs"`
	} `json:"answers"`
}

type replayReport struct {
	Source  string `json:"source"`
	Summary struct {
		Containers int `json:"containers"`
		Differ     int `json:"differ"`
	} `json:"summary"`
	Containers []replayContainer `json:"containers"`
	Warnings   []string          `json:"warnings"`
}

// gpuLauncher writes an executable running nri's gpu-env with config.
func gpuLauncher(t *testing.T, dir, name, config string) string {
	t.Helper()
	conf := filepath.Join(dir, name+".yaml")
	writeFile(t, conf, config)
	exe := filepath.Join(dir, name, "50-gpu-env")
	writeFile(t, exe, fmt.Sprintf("#!/bin/sh\nexec %s plugin gpu-env -config %s\n", shellQuote(filepath.Join(suite.bin, "nri")), shellQuote(conf)))
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// replay runs nri replay FILE args... --output json and returns its exit
// status and report.
func (r *runtime) replay(file string, args ...string) (int, replayReport) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "nri"), append([]string{"replay", file, "--output", "json"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var rep replayReport
	if err := json.Unmarshal(out, &rep); err != nil {
		r.t.Fatalf("nri replay %s %v: %v\nstdout:\n%s\nstderr:\n%s", file, args, err, out, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), rep
}

// differing returns "CONTAINER: PATH=NEW ..." for the containers of rep
// that would differ, sorted.
func differing(rep replayReport) []string {
	var out []string
	for _, c := range rep.Containers {
		if !c.Differs {
			continue
		}
		var fields []string
		for _, ch := range c.Changes {
			fields = append(fields, ch.Kind+" "+ch.Path+"="+ch.New)
		}
		slices.Sort(fields)
		out = append(out, c.Name+": "+strings.Join(fields, ", "))
	}
	slices.Sort(out)
	return out
}

// recordedPods runs the recorded pods: a GPU pod (gpu-env's scope) whose
// train container picks GPU 1 by annotation, with an eval container, and a
// CPU pod; suffix names a later copy. It returns the GPU pod's
// containers, by name.
func (r *runtime) recordedPods(suffix string) map[string]*harness.ContainerInfo {
	r.t.Helper()
	gpu := harness.NewPod("ml", "trainer"+suffix)
	gpu.Labels = map[string]string{"accel": "gpu"}
	gpu.Annotations = map[string]string{"gpu-env.nrikit.dev/visible-devices/container.train": "1"}
	podID, err := r.cri.RunPod(r.ctx, gpu)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]*harness.ContainerInfo{}
	for _, name := range []string{"train", "eval"} {
		c := harness.NewContainer(name)
		c.Envs = []harness.KeyValue{{Key: "PASSWORD", Value: "hunter2"}}
		out[name] = r.createAndStart(podID, gpu, c)
	}
	cpu := harness.NewPod("frontend", "web"+suffix)
	cpuID, err := r.cri.RunPod(r.ctx, cpu)
	if err != nil {
		r.t.Fatal(err)
	}
	r.createAndStart(cpuID, cpu, harness.NewContainer("nginx"))
	return out
}

// TestRecordReplay records a node while its pods run and replays the
// recording (see the top of this file).
func TestRecordReplay(t *testing.T) {
	start := time.Now()
	r := newRuntime(t, harness.Options{})
	recDir := filepath.Join(r.Dir, "nri-record")
	if err := os.MkdirAll(recDir, 0o700); err != nil {
		t.Fatal(err)
	}
	runtimeRec := filepath.Join(recDir, "runtime.nrirec")
	if suite.nrikit {
		// The runtime records itself: record.yaml beside the policy file.
		conf := filepath.Join(filepath.Dir(r.PolicyPath()), "record.yaml")
		if err := os.WriteFile(conf, []byte("path: "+runtimeRec+"\nkeepAnnotations: [\"gpu-env.nrikit.dev/*\"]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.start()
	work := t.TempDir()
	gpuConf := filepath.Join(work, "gpu-env.yaml")
	writeFile(t, gpuConf, gpuConfig)
	gpu := r.samplePlugin("gpu-env", "50", "-config", gpuConf)
	pluginRec := filepath.Join(recDir, "node.nrirec")
	recorder := r.external("99-recorder", filepath.Join(suite.bin, "nri"), "record", "-idx", "99", "-socket", r.NRISocket,
		"-out", pluginRec, "-keep-annotation", "gpu-env.nrikit.dev/*")

	before := r.recordedPods("")
	wantEnv(t, before["train"], "NVIDIA_VISIBLE_DEVICES", "1")
	wantEnv(t, before["eval"], "NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
	if err := recorder.Stop(); err != nil { // SIGTERM: the recording is closed
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pluginRec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "hunter2") {
		t.Error("the recording holds a secret in clear")
	}
	recorded := time.Since(start)

	// The next configuration rolled out for real, before the replays
	// that must foresee it: the containers created then.
	if err := gpu.Stop(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, gpuConf, gpuConfigNext)
	p := r.startExternal("50-gpu-env", filepath.Join(suite.bin, "nri"), "plugin", "gpu-env", "-idx", "50", "-socket", r.NRISocket, "-config", gpuConf)
	r.waitExternal(p, "50-gpu-env", 2)
	next := r.recordedPods("-next")
	if suite.nrikit {
		// Then a policy refusing gpu-env's NVIDIA_DRIVER_CAPABILITIES: the
		// runtime reads it again within 10 s, while the replays run.
		r.writePolicy(refusingPolicy)
	}
	policyWritten := time.Now()

	sameExe := gpuLauncher(t, work, "same", gpuConfig)
	nextExe := gpuLauncher(t, work, "next", gpuConfigNext)
	policy := filepath.Join(work, "policy.yaml")
	writeFile(t, policy, refusingPolicy)

	code, rep := r.replay(pluginRec, "--plugin", sameExe)
	if code != 0 || rep.Summary.Containers != 3 || rep.Summary.Differ != 0 {
		t.Fatalf("the recording replayed through gpu-env as it was: status %d, %+v", code, rep)
	}
	code, rep = r.replay(pluginRec, "--plugin", nextExe)
	wantNext := []string{
		"ml/trainer/eval: modified env[NVIDIA_DRIVER_CAPABILITIES]=all",
		"ml/trainer/train: modified env[NVIDIA_DRIVER_CAPABILITIES]=all",
	}
	if got := differing(rep); code != 1 || !slices.Equal(got, wantNext) {
		t.Fatalf("the recording replayed with the next configuration: status %d, differing %q, want %q", code, got, wantNext)
	}
	// What the runtime did with the next configuration: the values named.
	for _, name := range []string{"train", "eval"} {
		wantEnv(t, next[name], "NVIDIA_DRIVER_CAPABILITIES", "all")
	}
	wantEnv(t, next["train"], "NVIDIA_VISIBLE_DEVICES", "1")
	wantEnv(t, next["eval"], "NVIDIA_VISIBLE_DEVICES", "void")
	evidence(t, "%s: nri replay of the plugin's recording with gpu-env's next configuration: exit %d, %q; rolled out, the runtime gives train and eval NVIDIA_DRIVER_CAPABILITIES=all",
		r.Kind(), code, differing(rep))

	code, rep = r.replay(pluginRec, "--plugin", nextExe, "--policy", policy)
	wantRefused := []string{
		"ml/trainer/eval: removed env[NVIDIA_DRIVER_CAPABILITIES]=, removed env[NVIDIA_VISIBLE_DEVICES]=",
		"ml/trainer/train: removed env[NVIDIA_DRIVER_CAPABILITIES]=, removed env[NVIDIA_VISIBLE_DEVICES]=",
	}
	if got := differing(rep); code != 1 || !slices.Equal(got, wantRefused) {
		t.Fatalf("the recording replayed under the refusing policy: status %d, differing %q, want %q", code, got, wantRefused)
	}
	evidence(t, "%s: nri replay with the next configuration under a policy refusing NVIDIA_DRIVER_CAPABILITIES: exit %d, %q", r.Kind(), code, differing(rep))
	if !suite.nrikit {
		t.Logf("%s runs upstream's NRI, which has no policy: the refusal is replayed, not rolled out", r.Kind())
		return
	}

	// The runtime's own recording: gpu-env's answer compared too.
	code, rep = r.replay(runtimeRec, "--plugin", nextExe)
	if got := differing(rep); code != 1 || rep.Source != "runtime" || !slices.Equal(got, wantNext) {
		t.Fatalf("the runtime's recording replayed: status %d, source %s, differing %q", code, rep.Source, got)
	}
	for _, c := range rep.Containers {
		if c.Differs && (len(c.Answers) != 1 || c.Answers[0].Plugin != "50-gpu-env" || !c.Answers[0].Differs) {
			t.Errorf("%s: plugin answers %+v, want gpu-env's, differing", c.Name, c.Answers)
		}
	}
	evidence(t, "%s: nri replay of the runtime's own recording (record.yaml): exit %d, %q, gpu-env's answer differing in each", r.Kind(), code, differing(rep))

	// The policy rolled out for real: neither variable, as replayed.
	var refused map[string]*harness.ContainerInfo
	for i := 0; ; i++ {
		refused = r.recordedPods(fmt.Sprintf("-refused-%d", i))
		if _, ok := specEnv(refused["train"].Spec, "NVIDIA_DRIVER_CAPABILITIES"); !ok {
			break
		}
		if time.Since(policyWritten) > time.Minute {
			t.Fatalf("a minute after the policy was written, containers still get gpu-env's variables")
		}
	}
	for _, name := range []string{"train", "eval"} {
		wantNoEnv(t, refused[name], "NVIDIA_DRIVER_CAPABILITIES")
		wantNoEnv(t, refused[name], "NVIDIA_VISIBLE_DEVICES")
	}
	evidence(t, "%s: the policy rolled out: train and eval get neither NVIDIA_DRIVER_CAPABILITIES nor NVIDIA_VISIBLE_DEVICES, as replayed; recorded in %s, all in %s",
		r.Kind(), recorded.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}
